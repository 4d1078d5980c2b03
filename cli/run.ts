import { CommanderError, type Command } from 'commander';
import { Context, type GlobalOptions } from './context.ts';
import { EXIT } from './exit-codes.ts';
import type { Io } from './io.ts';
import { buildProgram } from './program.ts';

/**
 * Runs `conv` with `args` (without node and script) and returns the exit code. Does not exit
 * the process, so tests can drive it in-process with captured streams.
 */
export async function run(args: string[], io: Io): Promise<number> {
  let program: Command | undefined;
  const ctx = new Context(io, () => (program?.opts<GlobalOptions>() ?? {}));
  program = buildProgram(ctx);
  try {
    await program.parseAsync(args, { from: 'user' });
  } catch (error) {
    if (error instanceof CommanderError) {
      // --help and --version end here too, with exit code 0; commander already printed.
      if (error.code === 'commander.helpDisplayed' || error.code === 'commander.version') return EXIT.ok;
      // `conv` alone prints the help (on stderr): a usage error, like every other parse error.
      return EXIT.usage;
    }
    const { describeError } = await import('./report.ts');
    const report = describeError(error);
    ctx.output.error(report.code, report.message, report.hint);
    ctx.fail(report.exit);
  } finally {
    await ctx.close();
  }
  return ctx.exitCode;
}
