import { Argument, type Command } from 'commander';
import { examples } from '../args.ts';
import { SHELLS, completionScript, type Shell } from '../completion.ts';
import type { Context } from '../context.ts';

export function registerCompletion(program: Command, ctx: Context): void {
  program
    .command('completion')
    .description('print a shell completion script (bash, zsh or fish)')
    .addArgument(new Argument('<shell>', 'the shell to complete for').choices(SHELLS))
    .addHelpText('after', examples([
      ['eval "$(conv completion bash)"', 'bash: add to ~/.bashrc'],
      ['source <(conv completion zsh)', 'zsh: add to ~/.zshrc (after compinit)'],
      ['conv completion fish > ~/.config/fish/completions/conv.fish', 'fish'],
    ]))
    .action((shell: Shell) => {
      ctx.io.stdout.write(completionScript(program, shell));
    });
}
