import type { LogFormat, LogLevel } from './config.ts';

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };
const FLUSH_BYTES = 64 * 1024;
/** Lines wait at most this long for their write: a few ms of delay buys one write(2) per batch. */
const FLUSH_DELAY_MS = 20;

export type LogFields = Record<string, unknown>;

export interface Logger {
  log(level: LogLevel, event: string, fields?: LogFields): void;
  /** A lifecycle line (started, stopping, reloaded): written at `info` whatever the level. */
  notice(event: string, fields?: LogFields): void;
  enabled(level: LogLevel): boolean;
  /** Changes level and format (SIGHUP). */
  configure(level: LogLevel, format: LogFormat): void;
  /** Writes what is buffered now (before an exit). */
  flush(): void;
}

const COLOURS: Record<LogLevel, string> = { debug: '\x1b[90m', info: '\x1b[36m', warn: '\x1b[33m', error: '\x1b[31m' };

function prettyValue(value: unknown): string {
  if (typeof value === 'string') return /[\s"=]/.test(value) || value === '' ? JSON.stringify(value) : value;
  return JSON.stringify(value) ?? String(value);
}

/**
 * Log lines on stderr: JSON, one object per line (`time`, `level`, `event`, fields), or a readable
 * form on a terminal. Lines are gathered and written every 20 ms (or every 64 KiB): one request log
 * line per request must not cost a write(2) per request, which on a pipe is synchronous (measured:
 * a third of the logging cost under `npm run bench -- get-throughput`). Whatever is buffered is
 * written on exit, and by `flush()` before an exit the caller makes.
 */
export function createLogger(level: LogLevel, format: LogFormat, stream: NodeJS.WriteStream = process.stderr): Logger {
  let threshold = RANK[level];
  let pretty = format === 'pretty' || (format === 'auto' && stream.isTTY === true);
  let colour = pretty && stream.isTTY === true;
  // Lines are encoded into one reused Buffer at once: the line strings die young instead of
  // surviving garbage collections inside a growing string until the next write.
  const buffer = Buffer.allocUnsafe(FLUSH_BYTES);
  let used = 0;
  let scheduled = false;
  // One ISO timestamp per millisecond, not one Date and string per line.
  let lastMs = 0;
  let lastIso = '';

  const flush = () => {
    scheduled = false;
    if (used === 0) return;
    // A copy: the stream may still hold the bytes when the buffer is reused.
    stream.write(Buffer.from(buffer.subarray(0, used)));
    used = 0;
  };
  process.once('exit', flush);

  const render = (lvl: LogLevel, event: string, fields: LogFields | undefined): string => {
    const now = Date.now();
    if (now !== lastMs) {
      lastMs = now;
      lastIso = new Date(now).toISOString();
    }
    const time = lastIso;
    if (!pretty) return `${JSON.stringify({ time, level: lvl, event, ...fields })}\n`;
    const rest = fields ? Object.entries(fields).filter(([, v]) => v !== undefined).map(([k, v]) => `${k}=${prettyValue(v)}`).join(' ') : '';
    const tag = colour ? `${COLOURS[lvl]}${lvl.toUpperCase().padEnd(5)}\x1b[0m` : lvl.toUpperCase().padEnd(5);
    return `${time.slice(11, 23)} ${tag} ${event}${rest ? ` ${rest}` : ''}\n`;
  };

  const write = (lvl: LogLevel, event: string, fields: LogFields | undefined) => {
    const line = render(lvl, event, fields);
    // UTF-8 takes at most 3 bytes per UTF-16 unit.
    if (used + line.length * 3 > FLUSH_BYTES) flush();
    if (line.length * 3 > FLUSH_BYTES) stream.write(line);
    else used += buffer.write(line, used);
    if (used > 0 && !scheduled) {
      scheduled = true;
      setTimeout(flush, FLUSH_DELAY_MS).unref();
    }
  };

  return {
    log(lvl, event, fields) {
      if (RANK[lvl] >= threshold) write(lvl, event, fields);
    },
    notice: (event, fields) => write('info', event, fields),
    enabled: (lvl) => RANK[lvl] >= threshold,
    configure(newLevel, newFormat) {
      threshold = RANK[newLevel];
      pretty = newFormat === 'pretty' || (newFormat === 'auto' && stream.isTTY === true);
      colour = pretty && stream.isTTY === true;
    },
    flush,
  };
}

/**
 * The level of the core's events (src/ logs by event name only): failures are errors, the
 * runner's own step lines are debug (the daemon logs every state change itself, once); a
 * conversion re-queued at start after a crash stays info.
 */
export function levelOfEvent(event: string): LogLevel {
  if (/(^|\.)(error|internal_error|worker_error)$/.test(event)) return 'error';
  if (/(^|\.)(warn|warning)$/.test(event)) return 'warn';
  if (/^conversion\.(started|succeeded|failed)$/.test(event)) return 'debug';
  return 'info';
}
