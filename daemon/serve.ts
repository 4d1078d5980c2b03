import type { DaemonConfig } from './config.ts';
import { startDaemon } from './server.ts';
import { DataDirLockedError } from '../src/store/data-dir-lock.ts';

function log(event: string, fields: Record<string, unknown>): void {
  process.stderr.write(`${JSON.stringify({ time: new Date().toISOString(), event, ...fields })}\n`);
}

/** `convd serve`: runs until SIGTERM/SIGINT, then stops taking work and re-queues what runs. */
export async function serve(config: DaemonConfig): Promise<void> {
  if (config.allowInsecureCallbacks) log('warning', { message: 'INSECURE: http and private callback URLs are allowed (--allow-insecure-callbacks); for local testing only' });
  if (config.allowPrivateUrls) log('warning', { message: 'URL inputs may reach private and loopback addresses (--allow-private-urls)' });
  let daemon;
  try {
    daemon = await startDaemon(config, log);
  } catch (error) {
    if (error instanceof DataDirLockedError) {
      process.stderr.write(`convd: ${error.message}\n`);
      process.exit(1);
    }
    throw error;
  }
  process.stderr.write(`convd listening on ${daemon.url} (data ${config.dataDir})\n`);
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) process.exit(1);
    stopping = true;
    log('shutdown', { signal });
    void daemon.close(10_000).then(() => process.exit(0), () => process.exit(1));
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}
