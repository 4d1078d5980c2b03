import { EXIT, type ExitCode } from './exit-codes.ts';

/** An error the CLI itself raises, with the exit code and the code shown as `error: <code>: …`. */
export class CliError extends Error {
  constructor(
    readonly exitCode: ExitCode,
    readonly code: string,
    message: string,
    /** An extra line telling the user what to do about it. */
    readonly hint?: string,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

/** Wrong arguments: exit 2. */
export function usageError(message: string, hint?: string, code = 'usage'): CliError {
  return new CliError(EXIT.usage, code, message, hint);
}
