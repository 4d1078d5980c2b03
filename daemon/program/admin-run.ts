import { Option } from 'commander';
import { AdminError } from '../admin/operations.ts';

/** Where an admin command finds the store: the options every one of them takes. */
export interface StoreOptions {
  dataDir?: string;
  databaseUrl?: string;
  config?: string;
  json?: boolean;
}

export const dataDirOption = () => new Option('--data-dir <dir>', 'data directory (env CONVD_DATA_DIR)');
export const databaseOption = () => new Option('--database-url <url>', 'the PostgreSQL database of the daemons, instead of a data dir (env CONVD_DATABASE_URL)');
export const configOption = () => new Option('--config <file>', 'read data_dir and database_url from this config file (env CONVD_CONFIG)');

/** Where the store of an admin command is (the daemon's precedence; config-load.ts is loaded only then). */
export async function storePlaceOf(options: { dataDir?: string; databaseUrl?: string; config?: string }) {
  return (await import('../admin/store-place.ts')).storePlaceOf(options);
}

function print(result: unknown, asJson: boolean, human: (value: never) => string): void {
  process.stdout.write(asJson ? `${JSON.stringify(result, null, 2)}\n` : `${human(result as never)}\n`);
}

/** A failed command: its message on stderr, and its exit code (an AdminError's own, else 1). */
function fail(error: unknown): void {
  process.stderr.write(`convd: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = error instanceof AdminError ? error.exitCode : 1;
}

/** Runs an admin operation (through the running daemon, else on the store) and prints its result. */
export async function admin(op: string, args: Record<string, unknown>, options: StoreOptions, human: (value: never) => string): Promise<void> {
  const { runAdmin } = await import('../admin/run.ts');
  try {
    print(await runAdmin(await storePlaceOf(options), op, args), options.json === true, human);
  } catch (error) {
    fail(error);
  }
}

/** A store command: its report as JSON or as one line; failures as admin commands give them. */
export async function transfer(options: { json?: boolean }, work: () => Promise<object>): Promise<void> {
  try {
    const report = await work();
    print(report, options.json === true, (value: Record<string, unknown>) => Object.entries(value).map(([key, n]) => `${key} ${Array.isArray(n) ? n.join(',') || 'none' : String(n)}`).join(', '));
  } catch (error) {
    fail(error);
  }
}

export function usage(message: string): void {
  process.stderr.write(`convd: ${message}\n`);
  process.exitCode = 2;
}
