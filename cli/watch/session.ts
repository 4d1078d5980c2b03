import { mkdir, stat } from 'node:fs/promises';
import { basename, dirname, relative } from 'node:path';
import { watch, type FSWatcher } from 'chokidar';
import { ClientError, type ConvClient, type FormatDetails } from '../../src/client/types.ts';
import type { ConversionOptions, PublicConversion } from '../../src/model/conversion.ts';
import { ACTIVE_STATUSES } from '../../src/model/status.ts';
import type { Context } from '../context.ts';
import { usageError } from '../errors.ts';
import { EXIT, EXIT_INTERRUPTED, type ExitCode } from '../exit-codes.ts';
import { extensionOf } from '../inputs.ts';
import { onStopRequest } from '../interrupt.ts';
import { checkOptions } from '../option-check.ts';
import { formatBytes } from '../render.ts';
import { describeError } from '../report.ts';
import { saveDownload } from '../save.ts';
import { MAX_API_WAIT_SECONDS, waitForEnd } from '../wait.ts';
import { isInside, isTransientName, outputPathFor, resultExtension } from './paths.ts';
import { PathQueue } from './queue.ts';

export interface WatchSettings {
  /** Absolute path of the watched directory. */
  dir: string;
  /** Absolute path results go to (the watched directory itself when there is no --out). */
  outDir: string;
  target: string;
  options: [string, string][];
  variant?: string;
  concurrency: number;
  /** How long a file must stay unchanged before it is converted. */
  settleMs: number;
  /** Convert files present at start whose result is missing or older. */
  initial: boolean;
  /** In-process: a result is deleted from the ephemeral service once written (frees its space). */
  local: boolean;
}

/** After the second Ctrl-C, how long cancellations get before the command ends anyway. */
const CANCEL_GRACE_MS = 5000;

/**
 * One `conv watch` run: a chokidar watcher feeding a queue of files, each converted through the
 * ConvClient (in-process or a server), its result written beside it or under --out. Ends when a
 * stop is requested (Ctrl-C, SIGTERM): the first finishes the conversions in flight (exit 0),
 * a second cancels them (exit 130).
 */
export class WatchSession {
  private watcher: FSWatcher | null = null;
  private readonly queue: PathQueue;
  /** Results this run wrote: events for them are not new inputs. */
  private readonly written = new Set<string>();
  private readonly details = new Map<string, Promise<FormatDetails | null>>();
  private readonly typedOptions = new Map<string, Promise<ConversionOptions>>();
  /** Conversion ids of files being converted, to cancel on a second Ctrl-C. */
  private readonly inFlight = new Map<string, string>();
  /**
   * Submissions sent whose answer (the id) has not come back yet: the server may already be
   * converting them. Counted in the cancel note; each is cancelled as soon as its id is known.
   */
  private submitting = 0;
  /** Size and mtime of each file when its last conversion started: an event that changed neither
   * (a repeated add/change for the same write) converts nothing. */
  private readonly seen = new Map<string, string>();
  private ready = false;
  private cancelling = false;

  constructor(
    private readonly ctx: Context,
    private readonly client: ConvClient,
    private readonly settings: WatchSettings,
  ) {
    this.queue = new PathQueue(settings.concurrency, (path) => this.convert(path));
  }

  /** Checks the target and options before watching, so a typo fails at once (exit 2). */
  async preflight(): Promise<void> {
    const { target } = this.settings;
    const listing = await this.client.listFormats();
    const sources = listing.data.filter((entry) => entry.targets.includes(target)).map((entry) => entry.source);
    if (sources.length === 0) {
      const targets = [...new Set(listing.data.flatMap((entry) => entry.targets))].sort();
      throw usageError(`nothing converts to "${target}"`, `targets: ${targets.join(' ')} (see \`conv formats\`)`, 'unsupported_conversion');
    }
    if (this.settings.options.length === 0 && this.settings.variant === undefined) return;
    // Options apply per source; they must be valid for at least one source that reaches the target.
    const outcomes = await Promise.allSettled(sources.map((source) => this.optionsFor(source)));
    const problem = outcomes.find((o): o is PromiseRejectedResult => o.status === 'rejected');
    if (problem && outcomes.every((o) => o.status === 'rejected')) throw problem.reason;
  }

  /** Watches until a stop is requested; returns the exit code. */
  async run(): Promise<ExitCode> {
    const out = this.ctx.output;
    const { dir, outDir, settleMs } = this.settings;
    const stopped = new Promise<ExitCode>((resolve) => {
      // Whichever ends first, a cancel makes it exit 130.
      const end = (code: ExitCode) => resolve(this.cancelling ? EXIT_INTERRUPTED : code);
      onStopRequest(() => {
        void this.finish().then(end);
        onStopRequest(() => void this.cancel().then(end));
      });
    });
    this.watcher = watch(dir, {
      ignoreInitial: !this.settings.initial,
      // Convert a file once it stopped growing, not at its first byte.
      awaitWriteFinish: { stabilityThreshold: settleMs, pollInterval: Math.max(20, Math.min(100, Math.floor(settleMs / 4))) },
      ignored: (path) => this.ignored(path),
    });
    this.watcher.on('add', (path) => void this.consider(path, !this.ready));
    this.watcher.on('change', (path) => void this.consider(path, false));
    this.watcher.on('error', (error) => out.warn(`watching ${dir}: ${(error as Error).message}`));
    await new Promise<void>((resolve) => this.watcher!.once('ready', () => resolve()));
    this.ready = true;
    const where = outDir === dir ? 'beside each file' : `into ${this.display(outDir)}`;
    out.note(`watching ${this.display(dir)}: converting to ${this.settings.target} ${where} (Ctrl-C to stop)`);
    return stopped;
  }

  /** First stop: no new files; the conversions in flight finish and are written. */
  private async finish(): Promise<ExitCode> {
    await this.watcher?.close();
    const dropped = this.queue.stop();
    const running = this.queue.active;
    if (running > 0) this.ctx.output.note(`stopping: finishing ${running} conversion${running === 1 ? '' : 's'} (Ctrl-C again to cancel)`);
    if (dropped > 0) this.ctx.output.note(`${dropped} waiting file${dropped === 1 ? '' : 's'} not converted`);
    await this.queue.drained();
    return EXIT.ok;
  }

  /** Second stop: the conversions in flight are cancelled (DELETE), their results not written. */
  private async cancel(): Promise<ExitCode> {
    this.cancelling = true;
    const count = this.inFlight.size + this.submitting;
    this.ctx.output.note(`cancelling ${count} conversion${count === 1 ? '' : 's'}`);
    await Promise.allSettled([...this.inFlight.values()].map((id) => this.cancelConversion(id)));
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.queue.drained(), new Promise((resolve) => (timer = setTimeout(resolve, CANCEL_GRACE_MS)))]);
    clearTimeout(timer);
    return EXIT_INTERRUPTED;
  }

  /** DELETE on a finished conversion would delete its result: look first (as `conv cancel` does). */
  private async cancelConversion(id: string): Promise<void> {
    const current = await this.client.getConversion(id);
    if (ACTIVE_STATUSES.has(current.status)) await this.client.deleteConversion(id);
  }

  private ignored(path: string): boolean {
    if (path === this.settings.dir) return false;
    if (isTransientName(basename(path))) return true;
    if (this.written.has(path)) return true;
    return this.settings.outDir !== this.settings.dir && isInside(path, this.settings.outDir);
  }

  private display(path: string): string {
    const rel = relative(this.ctx.io.cwd, path);
    return rel === '' ? '.' : rel.startsWith('..') ? path : rel;
  }

  private skip(path: string, why: string): void {
    this.ctx.output.note(this.ctx.output.err.dim(`skipped ${this.display(path)}: ${why}`));
  }

  private async consider(path: string, initial: boolean): Promise<void> {
    if (this.ignored(path)) return;
    if (initial) {
      // Like make: a file whose result is already there and newer is not converted again.
      const { dir, outDir, target } = this.settings;
      const [input, output] = await Promise.all([stat(path).catch(() => null), stat(outputPathFor(path, dir, outDir, target)).catch(() => null)]);
      if (!input || (output && output.mtimeMs >= input.mtimeMs)) return;
    }
    this.queue.push(path);
  }

  private formatFor(source: string): Promise<FormatDetails | null> {
    let pending = this.details.get(source);
    if (!pending) {
      pending = this.client.getFormat(source).catch((error: unknown) => {
        if (error instanceof ClientError && error.status === 404) return null;
        this.details.delete(source); // a passing failure (network) is not remembered
        throw error;
      });
      this.details.set(source, pending);
    }
    return pending;
  }

  private optionsFor(source: string): Promise<ConversionOptions> {
    let pending = this.typedOptions.get(source);
    if (!pending) {
      pending = this.formatFor(source).then((details) => {
        if (!details) return Object.fromEntries(this.settings.options);
        return checkOptions(details, this.settings.target, this.settings.options, this.settings.variant) ?? Object.fromEntries(this.settings.options);
      });
      this.typedOptions.set(source, pending);
    }
    return pending;
  }

  private async convert(path: string): Promise<void> {
    const { target, variant, dir, outDir } = this.settings;
    const name = this.display(path);
    const out = this.ctx.output;
    let conversion: PublicConversion | null = null;
    try {
      const info = await stat(path).catch(() => null);
      if (!info?.isFile()) return; // gone (moved away) before its turn
      const version = `${info.size}:${info.mtimeMs}`;
      if (this.seen.get(path) === version) return;
      this.seen.set(path, version);
      const source = extensionOf(basename(path));
      if (!source) return this.skip(path, 'no extension to tell its format');
      const details = await this.formatFor(source);
      if (!details) return this.skip(path, `${source} is not a format ${this.settings.local ? 'conv converts' : 'the server converts'}`);
      if (!details.data.some((entry) => entry.target === target)) return this.skip(path, `${details.source} cannot be converted to ${target}`);
      if (outputPathFor(path, dir, outDir, target) === path) return this.skip(path, `it is already ${target} and its result would replace it (use --out)`);
      const options = await this.optionsFor(source);
      this.submitting += 1;
      try {
        conversion = await this.client.createConversion({
          input: { kind: 'file', path },
          target,
          ...(variant !== undefined && { variant }),
          ...(Object.keys(options).length > 0 && { options }),
          // Answered at once: the id must be known while the conversion runs, to cancel it.
          wait: 0,
        });
      } finally {
        this.submitting -= 1;
      }
      this.inFlight.set(path, conversion.id);
      // Submitted while a cancel was under way: it missed the DELETE sweep.
      if (this.cancelling) await this.cancelConversion(conversion.id).catch(() => undefined);
      conversion = (await waitForEnd(this.client, conversion, { deadline: Infinity, pollSeconds: MAX_API_WAIT_SECONDS })).conversion;
      this.inFlight.delete(path);
      // Ended as the cancel came: its result is not written.
      if (this.cancelling && conversion.status === 'succeeded') return;
      if (conversion.status !== 'succeeded') {
        const reason = conversion.error ?? { code: conversion.status, message: `the conversion was ${conversion.status}` };
        if (out.mode.json) out.jsonLine(conversion);
        out.error(reason.code, `${name}: ${reason.message} (${conversion.id})`);
        return;
      }
      const download = await this.client.download(conversion.id);
      const resultPath = outputPathFor(path, dir, outDir, resultExtension(download.filename, target));
      await mkdir(dirname(resultPath), { recursive: true });
      this.written.add(resultPath);
      await saveDownload(download, { kind: 'file', path: resultPath }, this.ctx.io.stdout);
      if (out.mode.json) out.jsonLine(conversion);
      else out.line(`${name} → ${this.display(resultPath)} (${formatBytes(conversion.result?.size)}) ${out.out.dim(conversion.id)}`);
      if (this.settings.local) await this.client.deleteConversion(conversion.id).catch(() => undefined);
    } catch (error) {
      const report = describeError(error);
      out.error(report.code, `${name}: ${report.message}${conversion ? ` (${conversion.id})` : ''}`, report.hint);
    } finally {
      this.inFlight.delete(path);
    }
  }
}
