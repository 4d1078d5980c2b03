import type { Command, Option } from 'commander';

/**
 * Shell completion scripts generated from the commander program itself, so a new command or
 * option is completed without anyone editing three shell dialects by hand.
 */

export const SHELLS = ['bash', 'zsh', 'fish'] as const;
export type Shell = (typeof SHELLS)[number];

interface OptionModel {
  flags: string[];
  takesValue: boolean;
  description: string;
  choices: string[];
  files: boolean;
}

interface CommandModel {
  /** Words after `conv`: '' for the program, 'config set' for a subcommand. */
  path: string;
  name: string;
  description: string;
  options: OptionModel[];
  subcommands: CommandModel[];
  /** Values of the first positional argument, when it has a fixed set. */
  argChoices: string[];
  /** Whether positional arguments are files. */
  argFiles: boolean;
}

/** Options whose value is a path. */
const FILE_OPTIONS = new Set(['--output', '--out']);
/** Commands whose positional arguments are paths. */
const FILE_ARGUMENT_COMMANDS = new Set(['convert', 'webhook verify', 'watch']);

function optionModel(option: Option): OptionModel {
  return {
    flags: [option.short, option.long].filter((flag): flag is string => typeof flag === 'string'),
    takesValue: option.required || option.optional,
    description: option.description,
    choices: option.argChoices ?? [],
    files: option.long !== undefined && FILE_OPTIONS.has(option.long),
  };
}

function commandModel(command: Command, parentPath: string): CommandModel {
  const path = parentPath === '' && !command.parent ? '' : [parentPath, command.name()].filter(Boolean).join(' ');
  const options = command.options.map(optionModel);
  options.push({ flags: ['-h', '--help'], takesValue: false, description: 'show help', choices: [], files: false });
  if (!command.parent) options.push({ flags: ['-V', '--version'], takesValue: false, description: 'print the version', choices: [], files: false });
  const first = command.registeredArguments[0];
  return {
    path,
    name: command.name(),
    description: command.description(),
    options,
    subcommands: command.commands.filter((sub) => sub.name() !== 'help').map((sub) => commandModel(sub, path)),
    argChoices: first?.argChoices ?? [],
    argFiles: FILE_ARGUMENT_COMMANDS.has(path),
  };
}

function flatten(model: CommandModel): CommandModel[] {
  return [model, ...model.subcommands.flatMap(flatten)];
}

/** Single quotes for a POSIX shell word. */
function quote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

function valueOptions(all: CommandModel[]): string[] {
  return [...new Set(all.flatMap((c) => c.options.filter((o) => o.takesValue).flatMap((o) => o.flags)))];
}

export function completionScript(program: Command, shell: Shell): string {
  const root = commandModel(program, '');
  switch (shell) {
    case 'bash':
      return bashScript(root);
    case 'zsh':
      return zshScript(root);
    case 'fish':
      return fishScript(root);
  }
}

function bashScript(root: CommandModel): string {
  const all = flatten(root);
  const name = root.name;
  const globals = root.options.flatMap((o) => o.flags);
  const cases = all.map((c) => {
    const opts = c.path === '' ? globals : [...c.options.flatMap((o) => o.flags), ...globals];
    const lines = [
      `    ${quote(c.path)})`,
      `      cmds=${quote(c.subcommands.map((s) => s.name).join(' '))}`,
      `      opts=${quote(opts.join(' '))}`,
      `      args=${quote(c.argChoices.join(' '))}`,
      `      files=${c.argFiles ? 1 : 0}`,
      '      ;;',
    ];
    return lines.join('\n');
  });
  const choiceCases = all.flatMap((c) => c.options).filter((o) => o.choices.length > 0 || o.files);
  const seen = new Set<string>();
  const valueCases = choiceCases
    .filter((o) => !seen.has(o.flags.join('|')) && seen.add(o.flags.join('|')))
    .map((o) => `    ${o.flags.join('|')}) ${o.files ? 'compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- "$cur"))' : `COMPREPLY=($(compgen -W ${quote(o.choices.join(' '))} -- "$cur"))`}; return ;;`);
  return `# bash completion for ${name}; load with: eval "$(${name} completion bash)"
# (or save it as ~/.local/share/bash-completion/completions/${name})
_${name}_completion() {
  local cur prev path="" word i skip=0 cmds opts args files
  cur="\${COMP_WORDS[COMP_CWORD]}"
  prev="\${COMP_WORDS[COMP_CWORD-1]}"
  local value_opts=${quote(` ${valueOptions(all).join(' ')} `)}
  for ((i = 1; i < COMP_CWORD; i++)); do
    word="\${COMP_WORDS[i]}"
    if ((skip)); then skip=0; continue; fi
    if [[ "$word" == -* ]]; then
      [[ "$word" != *=* && "$value_opts" == *" $word "* ]] && skip=1
      continue
    fi
    _${name}_describe "$path"
    [[ " $cmds " == *" $word "* ]] && path="\${path:+$path }$word"
  done
  case "$prev" in
${valueCases.join('\n')}
  esac
  if [[ "$cur" != -* && "$value_opts" == *" $prev "* ]]; then
    COMPREPLY=()
    return
  fi
  _${name}_describe "$path"
  if [[ "$cur" == -* ]]; then
    COMPREPLY=($(compgen -W "$opts" -- "$cur"))
  elif [[ -n "$cmds" ]]; then
    COMPREPLY=($(compgen -W "$cmds" -- "$cur"))
  elif [[ -n "$args" ]]; then
    COMPREPLY=($(compgen -W "$args" -- "$cur"))
  elif ((files)); then
    compopt -o filenames 2>/dev/null
    COMPREPLY=($(compgen -f -- "$cur"))
  else
    COMPREPLY=()
  fi
}
_${name}_describe() {
  case "$1" in
${cases.join('\n')}
    *) cmds=""; opts=""; args=""; files=0 ;;
  esac
}
complete -F _${name}_completion ${name}
`;
}

function zshScript(root: CommandModel): string {
  const all = flatten(root);
  const name = root.name;
  const globals = root.options;
  // Whole-array assignments: zsh takes quotes in `a['key']=…` literally, but not in `a=(k v …)`.
  const assoc = (array: string, pairs: [string, string][]) =>
    `_${name}_${array}=(\n${pairs.map(([key, value]) => `  ${quote(key)} ${quote(value)}`).join('\n')}\n)`;
  const tables = [
    assoc('cmds', all.map((c) => [c.path, c.subcommands.map((sub) => sub.name).join(' ')])),
    assoc('desc', all.filter((c) => c.path !== '').map((c) => [c.path, c.description])),
    assoc('opts', all.map((c) => {
      const options = c.path === '' ? globals : [...c.options, ...globals];
      return [c.path, options.flatMap((o) => o.flags.map((f) => `${f}:${o.description.replace(/:/g, '\\:')}`)).join('\n')];
    })),
    assoc('args', all.map((c) => [c.path, c.argChoices.join(' ')])),
    assoc('files', all.map((c) => [c.path, c.argFiles ? '1' : '0'])),
  ];
  const valueCases = all.flatMap((c) => c.options).filter((o) => o.choices.length > 0 || o.files);
  const seen = new Set<string>();
  const cases = valueCases
    .filter((o) => !seen.has(o.flags.join('|')) && seen.add(o.flags.join('|')))
    .map((o) => `    ${o.flags.join('|')}) ${o.files ? '_files' : `compadd -- ${o.choices.join(' ')}`}; return ;;`);
  return `#compdef ${name}
# zsh completion for ${name}; load with: source <(${name} completion zsh)
# (or save it as _${name} in a directory of your $fpath)
typeset -gA _${name}_cmds _${name}_desc _${name}_opts _${name}_args _${name}_files
${tables.join('\n')}
_${name}() {
  local path_="" word i skip=0
  local value_opts=${quote(` ${valueOptions(all).join(' ')} `)}
  for (( i = 2; i < CURRENT; i++ )); do
    word=\${words[i]}
    if (( skip )); then skip=0; continue; fi
    if [[ $word == -* ]]; then
      [[ $word != *=* && $value_opts == *" $word "* ]] && skip=1
      continue
    fi
    if [[ " \${_${name}_cmds[$path_]} " == *" $word "* ]]; then
      path_=\${path_:+$path_ }$word
    fi
  done
  local prev=\${words[CURRENT-1]}
  case $prev in
${cases.join('\n')}
  esac
  if [[ $PREFIX != -* && $value_opts == *" $prev "* ]]; then
    return
  fi
  if [[ $PREFIX == -* ]]; then
    local -a opts
    opts=("\${(@f)_${name}_opts[$path_]}")
    _describe -t options 'option' opts
    return
  fi
  local -a subs
  local sub
  for sub in \${=_${name}_cmds[$path_]}; do
    subs+=("$sub:\${_${name}_desc[\${path_:+$path_ }$sub]}")
  done
  if (( \${#subs} )); then
    _describe -t commands 'command' subs
  elif [[ -n \${_${name}_args[$path_]} ]]; then
    compadd -- \${=_${name}_args[$path_]}
  elif [[ \${_${name}_files[$path_]} == 1 ]]; then
    _files
  fi
}
if [[ $zsh_eval_context[-1] == loadautofunc ]]; then
  _${name} "$@"
else
  compdef _${name} ${name}
fi
`;
}

function fishScript(root: CommandModel): string {
  const name = root.name;
  const lines = [
    `# fish completion for ${name}; load with: ${name} completion fish | source`,
    `# (or save it as ~/.config/fish/completions/${name}.fish)`,
    `complete -c ${name} -f`,
  ];
  const optionLine = (condition: string | null, option: OptionModel): string => {
    const parts = [`complete -c ${name}`];
    if (condition) parts.push(`-n ${quote(condition)}`);
    for (const flag of option.flags) parts.push(flag.startsWith('--') ? `-l ${flag.slice(2)}` : `-s ${flag.slice(1)}`);
    if (option.takesValue) parts.push(option.files ? '-rF' : option.choices.length > 0 ? `-xa ${quote(option.choices.join(' '))}` : '-x');
    parts.push(`-d ${quote(option.description)}`);
    return parts.join(' ');
  };
  for (const option of root.options) lines.push(optionLine(null, option));
  const visit = (command: CommandModel, ancestors: string[]) => {
    const subNames = command.subcommands.map((s) => s.name);
    // At the program level: no subcommand yet. Below: inside every ancestor, none of the children yet.
    const here = ancestors.length === 0
      ? '__fish_use_subcommand'
      : `${ancestors.map((a) => `__fish_seen_subcommand_from ${a}`).join('; and ')}${subNames.length ? `; and not __fish_seen_subcommand_from ${subNames.join(' ')}` : ''}`;
    for (const sub of command.subcommands) {
      lines.push(`complete -c ${name} -n ${quote(here)} -a ${sub.name} -d ${quote(sub.description)}`);
    }
    if (ancestors.length > 0) {
      const inside = ancestors.map((a) => `__fish_seen_subcommand_from ${a}`).join('; and ');
      for (const option of command.options) {
        if (option.flags.includes('--help')) continue;
        lines.push(optionLine(inside, option));
      }
      if (command.argChoices.length > 0) lines.push(`complete -c ${name} -n ${quote(here)} -a ${quote(command.argChoices.join(' '))}`);
      if (command.argFiles) lines.push(`complete -c ${name} -n ${quote(inside)} -F`);
    }
    for (const sub of command.subcommands) visit(sub, [...ancestors, sub.name]);
  };
  visit(root, []);
  return `${lines.join('\n')}\n`;
}
