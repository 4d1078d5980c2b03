import { Argument, type Command } from 'commander';
import { examples } from '../args.ts';
import type { Shell } from '../completion.ts';
import type { Context } from '../context.ts';

export function registerCompletion(program: Command, ctx: Context): void {
  program
    .command('completion')
    .description('print a shell completion script (bash, zsh or fish)')
    .addArgument(new Argument('<shell>', 'the shell to complete for').choices(['bash', 'zsh', 'fish'] satisfies Shell[]))
    .addHelpText('after', examples([
      ['eval "$(conv completion bash)"', 'bash: add to ~/.bashrc'],
      ['source <(conv completion zsh)', 'zsh: add to ~/.zshrc (after compinit)'],
      ['conv completion fish > ~/.config/fish/completions/conv.fish', 'fish'],
    ]))
    .action(async (shell: Shell) => {
      const { completionScript } = await import('../completion.ts');
      ctx.io.stdout.write(completionScript(program, shell));
    });
}
