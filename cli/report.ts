import { ClientError } from '../src/client/types.ts';
import { CliError } from './errors.ts';
import { EXIT, exitCodeForApiError, type ExitCode } from './exit-codes.ts';

export interface ErrorReport {
  code: string;
  message: string;
  hint?: string;
  exit: ExitCode;
}

/** What to tell the user (and the exit code) for anything a command threw. */
export function describeError(error: unknown): ErrorReport {
  if (error instanceof CliError) {
    return { code: error.code, message: error.message, hint: error.hint, exit: error.exitCode };
  }
  if (error instanceof ClientError) {
    return { code: error.code, message: error.message, hint: hintFor(error), exit: exitCodeForApiError(error.code, error.status) };
  }
  const message = error instanceof Error ? error.message : String(error);
  const code = (error as NodeJS.ErrnoException | null)?.code;
  // File system errors while writing a result (EACCES, ENOSPC, …) carry their errno code.
  return { code: typeof code === 'string' ? code.toLowerCase() : 'internal_error', message, exit: EXIT.error };
}

function hintFor(error: ClientError): string | undefined {
  switch (error.code) {
    case 'unauthenticated':
      return 'check the API key: --api-key, CONV_API_KEY or `conv config set api-key KEY`';
    case 'forbidden':
      return 'this key lacks the scope for it; `convd keys create --scopes read,convert,delete` makes one that has it';
    case 'network_error':
      return 'is convd running there? check --base-url, CONV_BASE_URL or `conv config get base-url`';
    case 'rate_limited':
    case 'concurrency_limit':
      return 'wait a moment and try again (retries already happened)';
    case 'engine_time_exhausted':
      return 'this hour\'s engine time is used up; `conv account` shows when it resets';
    case 'insufficient_credits':
    case 'free_quota_exhausted':
      return 'see `conv account` for the balance and when it resets';
    default:
      return undefined;
  }
}
