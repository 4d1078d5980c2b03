import { ConfigError, loadConfig, type ConfigInput, type LoadedConfig } from './config-load.ts';
import { SETTINGS_BY_KEY } from './config-settings.ts';
import { createLogger, type Logger } from './log.ts';
import { memoryAllocator } from './ops/allocator.ts';
import { startDaemon, type RunningDaemon } from './compose-daemon.ts';
import { DataDirLockedError } from '../src/store/data-dir-lock.ts';
import { StoreUnavailableError } from '../src/store/unavailable.ts';

/** Keys whose value differs between two loads. */
function changedKeys(before: LoadedConfig, after: LoadedConfig): string[] {
  const keys = new Set([...before.values.keys(), ...after.values.keys()]);
  return [...keys].filter((key) => JSON.stringify(before.values.get(key)?.value) !== JSON.stringify(after.values.get(key)?.value));
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
  let current = loaded;
  const { config } = loaded;
  const logger: Logger = createLogger(config.logLevel, config.logFormat);
  for (const warning of loaded.warnings) logger.log('warn', 'config.warning', { message: warning });
  if (config.allowInsecureCallbacks) logger.log('warn', 'warning', { message: 'INSECURE: http and private callback URLs are allowed (--allow-insecure-callbacks); for local testing only' });
  if (config.allowPrivateUrls) logger.log('warn', 'warning', { message: 'URL inputs may reach private and loopback addresses (--allow-private-urls)' });
  const exit = (code: number) => {
    logger.flush();
    process.exit(code);
  };

  let daemon: RunningDaemon;
  try {
    daemon = await startDaemon(config, logger);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (error instanceof DataDirLockedError || error instanceof StoreUnavailableError || code === 'EADDRINUSE' || code === 'EACCES' || code === 'EADDRNOTAVAIL') {
      logger.flush();
      process.stderr.write(`convd: ${error instanceof Error ? error.message : String(error)}\n`);
      return exit(1);
    }
    throw error;
  }
  // Tests and scripts wait for this exact line: it stays plain text whatever the log format.
  logger.flush();
  process.stderr.write(`convd listening on ${daemon.url} (data ${config.dataDir})${daemon.metricsUrl ? ` metrics on ${daemon.metricsUrl}/metrics` : ''}\n`);
  logger.notice('started', {
    url: daemon.url, data_dir: config.dataDir, workers: config.workers, api: config.serveApi, config_file: config.configFile, pid: process.pid, allocator: memoryAllocator(),
    // Where state and files are, never the URLs themselves (a database URL may hold a password).
    store: config.databaseUrl ? 'postgresql' : 'lowdb', files: config.blobUrl ? 's3' : 'disk',
  });

  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) {
      logger.log('warn', 'shutdown.forced', { signal, message: 'second signal: exiting now; running work is re-queued at the next start' });
      return forceExit(daemon, logger);
    }
    stopping = true;
    const drainMs = current.config.drainTimeoutMs;
    logger.notice('shutdown', { signal, drain_ms: drainMs, running: daemon.system.pool.active, queued: daemon.system.queue.size });
    daemon.close(drainMs).then(
      (outcome) => {
        logger.notice('stopped', outcome);
        exit(0);
      },
      (error: unknown) => {
        logger.log('error', 'shutdown.error', { error: error instanceof Error ? error.stack : String(error) });
        exit(1);
      },
    );
  };

  let reloading = Promise.resolve();
  const reload = () => {
    reloading = reloading.then(async () => {
      let next: LoadedConfig;
      try {
        next = loadConfig({ ...input, env: process.env });
      } catch (error) {
        const message = error instanceof ConfigError ? error.problems : [String(error)];
        logger.log('error', 'config.reload_failed', { problems: message, message: 'the running configuration is unchanged' });
        return;
      }
      const changed = changedKeys(current, next);
      const restart = changed.filter((key) => !SETTINGS_BY_KEY.get(key)?.reloadable);
      const problems = await daemon.reload(next.config);
      // Settings that need a restart keep their running values, so the next reload reports them again.
      const values = new Map(next.values);
      for (const key of restart) {
        const running = current.values.get(key);
        if (running) values.set(key, running);
        else values.delete(key);
      }
      current = { ...next, values };
      const report = {
        applied: changed.filter((key) => !restart.includes(key)),
        needs_restart: restart,
        ...(problems.length > 0 ? { problems } : {}),
      };
      if (problems.length > 0) logger.log('warn', 'config.reloaded', report);
      else logger.notice('config.reloaded', report);
    });
  };

  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGHUP', reload);
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
