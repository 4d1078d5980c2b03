import { ConfigError, loadConfig, type ConfigInput, type LoadedConfig } from './config-load.ts';
import { SETTINGS_BY_KEY } from './config-settings.ts';
import type { DaemonConfig } from './config.ts';
import { createLogger, type Logger } from './log.ts';
import { memoryAllocator } from './ops/allocator.ts';
import { steadyHeapGrowth } from './ops/heap-growth.ts';
import { startDaemon, type RunningDaemon } from './compose-daemon.ts';
import { DataDirLockedError } from '../src/store/data-dir-lock.ts';
import { StoreUnavailableError } from '../src/store/unavailable.ts';

/** The configuration in force: the one started with, then what each reload leaves. */
interface InForce {
  loaded: LoadedConfig;
}

/**
 * `convd serve`. Signals:
 * - SIGTERM, SIGINT: graceful stop (see RunningDaemon.close) within the drain timeout, exit 0;
 *   a second one ends the process at once (see `forceExit`); work still running then is
 *   re-queued at the next start.
 * - SIGHUP: reads the config file (and the environment and flags it started with) again and
 *   applies what can change safely; an invalid file changes nothing.
 */
export async function serve(loaded: LoadedConfig, input: ConfigInput): Promise<void> {
  const { config } = loaded;
  const logger: Logger = createLogger(config.logLevel, config.logFormat);
  logStartWarnings(loaded, logger);
  // For as long as the process lives: a daemon's small heap, collected in full far less often.
  steadyHeapGrowth();
  const daemon = await startOrExit(config, logger);
  announce(daemon, config, logger);
  const inForce: InForce = { loaded };
  const stop = stopper(daemon, logger, () => inForce.loaded.config.drainTimeoutMs);
  const reload = reloader(daemon, logger, input, inForce);
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGHUP', reload);
}

function exit(logger: Logger, code: number): never {
  logger.flush();
  process.exit(code);
}

function logStartWarnings(loaded: LoadedConfig, logger: Logger): void {
  for (const warning of loaded.warnings) logger.log('warn', 'config.warning', { message: warning });
  if (loaded.config.allowInsecureCallbacks) logger.log('warn', 'warning', { message: 'INSECURE: http and private callback URLs are allowed (--allow-insecure-callbacks); for local testing only' });
  if (loaded.config.allowPrivateUrls) logger.log('warn', 'warning', { message: 'URL inputs may reach private and loopback addresses (--allow-private-urls)' });
}

/** The daemon started, or exit 1 with the reason on stderr when the start met what an operator fixes (a held data dir, a taken port). */
async function startOrExit(config: DaemonConfig, logger: Logger): Promise<RunningDaemon> {
  try {
    return await startDaemon(config, logger);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (error instanceof DataDirLockedError || error instanceof StoreUnavailableError || code === 'EADDRINUSE' || code === 'EACCES' || code === 'EADDRNOTAVAIL') {
      logger.flush();
      process.stderr.write(`convd: ${error instanceof Error ? error.message : String(error)}\n`);
      return exit(logger, 1);
    }
    throw error;
  }
}

function announce(daemon: RunningDaemon, config: DaemonConfig, logger: Logger): void {
  // Tests and scripts wait for this exact line: it stays plain text whatever the log format.
  logger.flush();
  process.stderr.write(`convd listening on ${daemon.url} (data ${config.dataDir})${daemon.metricsUrl ? ` metrics on ${daemon.metricsUrl}/metrics` : ''}\n`);
  logger.notice('started', {
    url: daemon.url, data_dir: config.dataDir, workers: config.workers, api: config.serveApi, config_file: config.configFile, pid: process.pid, allocator: memoryAllocator(),
    // Where state and files are, never the URLs themselves (a database URL may hold a password).
    store: config.databaseUrl ? 'postgresql' : 'lowdb', files: config.blobUrl ? 's3' : 'disk',
  });
}

/** The stop on SIGTERM and SIGINT: graceful the first time, at once the second. */
function stopper(daemon: RunningDaemon, logger: Logger, drainTimeoutMs: () => number): (signal: NodeJS.Signals) => void {
  let stopping = false;
  return (signal) => {
    if (stopping) {
      logger.log('warn', 'shutdown.forced', { signal, message: 'second signal: exiting now; running work is re-queued at the next start' });
      return forceExit(daemon, logger);
    }
    stopping = true;
    const drainMs = drainTimeoutMs();
    logger.notice('shutdown', { signal, drain_ms: drainMs, running: daemon.system.pool.active, queued: daemon.system.queue.size });
    daemon.close(drainMs).then(
      (outcome) => {
        logger.notice('stopped', outcome);
        exit(logger, 0);
      },
      (error: unknown) => {
        logger.log('error', 'shutdown.error', { error: error instanceof Error ? error.stack : String(error) });
        exit(logger, 1);
      },
    );
  };
}

/** The reload on SIGHUP, one at a time. */
function reloader(daemon: RunningDaemon, logger: Logger, input: ConfigInput, inForce: InForce): () => void {
  let reloading = Promise.resolve();
  return () => {
    reloading = reloading.then(() => reloadConfig(daemon, logger, input, inForce));
  };
}

/**
 * Reads the configuration again, has the daemon apply the settings marked reloadable and logs
 * what was applied and what needs a restart. Those keep their running values in force, so the
 * next reload reports them again.
 */
async function reloadConfig(daemon: RunningDaemon, logger: Logger, input: ConfigInput, inForce: InForce): Promise<void> {
  let next: LoadedConfig;
  try {
    next = loadConfig({ ...input, env: process.env });
  } catch (error) {
    const message = error instanceof ConfigError ? error.problems : [String(error)];
    logger.log('error', 'config.reload_failed', { problems: message, message: 'the running configuration is unchanged' });
    return;
  }
  const current = inForce.loaded;
  const changed = changedKeys(current, next);
  const restart = changed.filter((key) => !SETTINGS_BY_KEY.get(key)?.reloadable);
  const problems = await daemon.reload(next.config);
  const values = new Map(next.values);
  for (const key of restart) {
    const running = current.values.get(key);
    if (running) values.set(key, running);
    else values.delete(key);
  }
  inForce.loaded = { ...next, values };
  const report = {
    applied: changed.filter((key) => !restart.includes(key)),
    needs_restart: restart,
    ...(problems.length > 0 ? { problems } : {}),
  };
  if (problems.length > 0) logger.log('warn', 'config.reloaded', report);
  else logger.notice('config.reloaded', report);
}

/** Keys whose value differs between two loads. */
function changedKeys(before: LoadedConfig, after: LoadedConfig): string[] {
  const keys = new Set([...before.values.keys(), ...after.values.keys()]);
  return [...keys].filter((key) => JSON.stringify(before.values.get(key)?.value) !== JSON.stringify(after.values.get(key)?.value));
}

/**
 * The second signal. `process.exit` would wait for the libuv thread pool, where a libvips
 * operation cannot be interrupted (measured: 1.4 s for one 3000 px WebP encode, far more for a
 * large image), so the process kills itself instead: first the engines' subprocesses (aborting
 * a job kills its process group at once), then the log is written, then SIGKILL. That is as
 * safe as any crash: each store file keeps its last acknowledged copy whole (the other of its two
 * copies is the one being written), and the next start re-queues what was running.
 */
function forceExit(daemon: RunningDaemon, logger: Logger): void {
  for (const id of daemon.system.pool.activeIds()) void daemon.system.pool.abort(id, 'shutdown');
  logger.flush();
  process.kill(process.pid, 'SIGKILL');
}
