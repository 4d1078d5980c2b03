import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { copyFile, link, lstat, stat } from 'node:fs/promises';
import { availableParallelism, totalmem } from 'node:os';
import { basename } from 'node:path';
import { PassThrough, Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { defaultEngines } from '../engines/catalog.ts';
import { engineSettings } from '../engines/configuration.ts';
import type { KnownEngine } from '../engines/lazy.ts';
import { FormatRegistry } from '../formats/registry.ts';
import type { AccountRecord } from '../model/account.ts';
import type { PublicConversion } from '../model/conversion.ts';
import { defaultServiceConfig, type ServiceConfig } from '../service/config.ts';
import type { SpooledFile } from '../service/spooled-file.ts';
import type { ConversionSystem } from '../service/system.ts';
import { enginesFromFindings, formatCachePath, formatFingerprint, type FoundEngines } from '../engines/findings-cache.ts';
import type { LocalDataDir } from './local-data-dir.ts';
import {
  ClientError, type AccountView, type ConvClient, type CreateConversionRequest, type DownloadResult, type FormatDetails,
  type FormatListing, type ListPage,
} from './types.ts';

const CLOSE_GRACE_MS = 500;

export interface LocalClientOptions {
  workers?: number;
  /** Where the format cache lives ($XDG_CACHE_HOME) and which ffmpeg is found; default process.env. */
  env?: NodeJS.ProcessEnv;
  /** false: always probe the engines, never read or write the format cache. */
  formatCache?: boolean;
}

/**
 * The service in-process, for `conv` with no server configured: an ephemeral store in a temp dir
 * (nothing persists between runs), one unmetered account (no credits or limits that matter).
 * URL inputs may reach private addresses: this is the user's own machine, not a shared server.
 *
 * Nothing is opened here. The store and the worker pool open on the first call that needs them.
 * The engines' probe findings are cached between runs (engines/findings-cache.ts): with a current cache,
 * `listFormats` and `getFormat` cost a few file reads, and a conversion loads only the engine it
 * needs (sharp for images; never pdf-lib or ffmpeg for a PNG batch). Without one, every engine is
 * probed once and the findings written for the next run.
 */
export async function createLocalClient(options: LocalClientOptions = {}): Promise<ConvClient> {
  return new LocalClient(options);
}

interface OpenSystem {
  system: ConversionSystem;
  account: AccountRecord;
  dataDir: LocalDataDir;
}

/** The service's errors as the client contract's; loaded on the error path only. */
async function toClientError(error: unknown): Promise<never> {
  const [{ ApiError }, { renderMessage }] = await Promise.all([import('../errors/api-error.ts'), import('../errors/messages.ts')]);
  if (error instanceof ApiError) {
    throw new ClientError(error.code, renderMessage(error.code, error.params, 'en'), error.status, error.details);
  }
  throw error;
}

class LocalClient implements ConvClient {
  /**
   * The user's own machine, not a shared service: an engine host may take half the memory (it
   * still ends a runaway job), and each engine runs with its settings for it (`inProcess` of its
   * descriptor: the data engine's input caps are those of the engine itself).
   */
  private readonly config: ServiceConfig = defaultServiceConfig({
    baseUrl: 'local:/v1', allowPrivateUrls: true, sweepIntervalMs: 3_600_000,
    engineMemoryMb: Math.max(1024, Math.floor(totalmem() / 2 / 1024 / 1024)),
  });
  private readonly env: NodeJS.ProcessEnv;
  private opening: Promise<OpenSystem> | null = null;
  private registryPromise: Promise<FormatRegistry> | null = null;
  private enginesPromise: Promise<FoundEngines> | null = null;
  private closed = false;
  private closing: Promise<void> | null = null;

  constructor(private readonly options: LocalClientOptions) {
    this.env = options.env ?? process.env;
  }

  /** Opens the service once, on first use (temp dir, store, workers; engines as `engines()` made them). */
  private open(): Promise<OpenSystem> {
    if (this.closed) return Promise.reject(new ClientError('internal_error', 'the in-process service was closed', null));
    return (this.opening ??= (async () => {
      const [{ openSystem }, { createLocalDataDir }, { engines, save }] = await Promise.all([
        import('../service/system.ts'), import('./local-data-dir.ts'), this.engines(),
      ]);
      const dataDir = await createLocalDataDir();
      try {
        // One user's own runs: no other account to keep a quick lane for.
        const system = await openSystem({ dataDir: dataDir.path, config: this.config, workers: this.options.workers, quickLane: 0, engines, ephemeralStore: true });
        await save?.();
        await system.start();
        const account = await system.accounts.createAccount({ plan: 'unmetered', name: 'local' });
        return { system, account, dataDir };
      } catch (error) {
        await dataDir.remove();
        throw error;
      }
    })());
  }

  /**
   * The engines, built once: from the cached findings when they are current (nothing loaded),
   * else plain lazy engines, which the registry's probe loads; their findings are then cached.
   */
  private engines(): Promise<FoundEngines> {
    return (this.enginesPromise ??= (async () => {
      const workers = this.options.workers ?? availableParallelism();
      const settings = engineSettings(this.config, { inProcessWorkers: workers });
      // The JavaScript engines (data, pdf) run in host processes here too: a heap blow-up or a
      // time limit ends that process, not the user's `conv`. Started only by a conversion.
      const { EngineHost } = await import('../engines/host/engine-host.ts');
      const host = new EngineHost({ processes: workers, memoryLimitMb: this.config.engineMemoryMb });
      const make = (known: ReadonlyMap<string, KnownEngine>) => defaultEngines(settings, known, host);
      if (this.options.formatCache === false) return { engines: make(new Map()), save: null };
      return enginesFromFindings({ path: formatCachePath(this.env), fingerprint: () => formatFingerprint(this.env), make });
    })());
  }

  /** The format registry: the open service's, else one built from the engines (probed if need be). */
  private registry(): Promise<FormatRegistry> {
    if (this.opening) return this.opening.then(({ system }) => system.registry);
    return (this.registryPromise ??= (async () => {
      const { engines, save } = await this.engines();
      const registry = await FormatRegistry.create(engines, this.config.creditWeights);
      await save?.();
      return registry;
    })());
  }

  private async call<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      return toClientError(error);
    }
  }

  /**
   * A file input without an idempotency key: nothing will compare its hash, so it is not streamed
   * through one. A regular file is hard-linked into the spool: the same file under a name the
   * service owns (it renames and finally deletes that name, and only ever reads the file), made
   * without copying a byte or allocating an inode; a batch of small images spent a fifth of its
   * time on such copies and new files. The user's file edited in place during the run would be
   * seen; replaced, as editors save, it would not. Where no link can be made (another file system;
   * under Linux's protected_hardlinks, another user's file this one may not write; a symlink, which
   * would be linked itself) the kernel copies it.
   */
  private async spoolCopy(system: ConversionSystem, source: string, filename: string): Promise<SpooledFile> {
    const path = system.blobs.spoolPath();
    const info = await lstat(source).catch(() => null);
    // (Not on Windows, where deleting a link to a read-only file would clear that flag for both.)
    if (info?.isFile() && process.platform !== 'win32') {
      const linked = await link(source, path).then(() => true, () => false);
      if (linked) return { path, size: info.size, sha256: '', filename };
    }
    await copyFile(source, path);
    return { path, size: (await stat(path)).size, sha256: '', filename };
  }

  /** Copies the input into the spool, hashing it for the idempotency fingerprint as a daemon would. */
  private async spool(system: ConversionSystem, source: Readable, filename: string | null): Promise<SpooledFile> {
    const path = system.blobs.spoolPath();
    const hash = createHash('sha256');
    let size = 0;
    await pipeline(
      source,
      new Transform({
        transform(chunk: Buffer, _encoding, callback) {
          size += chunk.length;
          hash.update(chunk);
          callback(null, chunk);
        },
      }),
      createWriteStream(path, { mode: 0o600 }),
    );
    return { path, size, sha256: hash.digest('hex'), filename };
  }

  createConversion(request: CreateConversionRequest): Promise<PublicConversion> {
    return this.call(async () => {
      const { system, account } = await this.open();
      const fields: Record<string, unknown> = { target: request.target };
      if (request.source) fields.source = request.source;
      if (request.variant) fields.variant = request.variant;
      if (request.callbackUrl) fields.callback_url = request.callbackUrl;
      const files: SpooledFile[] = [];
      const { input } = request;
      if (input.kind === 'url') {
        fields.url = input.url;
        if (input.filename) fields.filename = input.filename;
      } else if (input.kind === 'file') {
        const filename = input.filename ?? basename(input.path);
        files.push(request.idempotencyKey
          ? await this.spool(system, createReadStream(input.path), filename)
          : await this.spoolCopy(system, input.path, filename));
      } else {
        files.push(await this.spool(system, input.stream, input.filename));
      }
      for (const other of [...(request.mergeWith ?? []), ...(request.attachments ?? [])]) {
        const filename = other.filename ?? basename(other.path);
        files.push(request.idempotencyKey
          ? await this.spool(system, createReadStream(other.path), filename)
          : await this.spoolCopy(system, other.path, filename));
      }
      const outcome = await system.conversions.create(account, {
        fields, options: request.options ?? {}, files, idempotencyKey: request.idempotencyKey,
      });
      const record = await system.conversions.answer({ ...outcome, wait: Math.min(request.wait ?? 0, 30) });
      return system.conversions.publicView(record);
    });
  }

  getConversion(id: string, options: { wait?: number } = {}): Promise<PublicConversion> {
    return this.call(async () => {
      const { system, account } = await this.open();
      const record = await system.conversions.get(account, id);
      return system.conversions.publicView(await system.conversions.waitForEnd(record, Math.min(options.wait ?? 0, 30)));
    });
  }

  listConversions(query: { status?: string; cursor?: string; limit?: number }): Promise<ListPage> {
    return this.call(async () => {
      const { system, account } = await this.open();
      return system.conversions.list(account, { status: query.status, cursor: query.cursor, limit: query.limit?.toString() });
    });
  }

  deleteConversion(id: string): Promise<PublicConversion> {
    return this.call(async () => {
      const { system, account } = await this.open();
      return system.conversions.publicView(await system.conversions.delete(account, id));
    });
  }

  download(id: string): Promise<DownloadResult> {
    return this.call(async () => {
      const { system, account } = await this.open();
      // Copied or moved from `localPath`: a file gone is told here, as `expired`.
      const handle = await system.conversions.download(account, id, { checkFile: true });
      let stream: Readable | null = null;
      return {
        // Opened on first use only: a caller that copies `localPath` never opens it.
        get stream() {
          return (stream ??= handle.localPath ? createReadStream(handle.localPath) : streamOf(handle.open()));
        },
        filename: handle.record.result!.filename,
        size: handle.size,
        ...(handle.localPath ? { localPath: handle.localPath } : {}),
      };
    });
  }

  listFormats(): Promise<FormatListing> {
    return this.call(async () => {
      const registry = await this.registry();
      return { data: registry.sources().map((source) => ({ source, targets: registry.targetsOf(source).map((pair) => pair.target) })) };
    });
  }

  /** As ConversionService.formatDetails, for the local account's plan (unmetered). */
  getFormat(rawSource: string): Promise<FormatDetails> {
    return this.call(async () => {
      const registry = await this.registry();
      const source = registry.normalize(rawSource);
      const pairs = source ? registry.targetsOf(source) : [];
      if (!source || pairs.length === 0) {
        const { ApiError } = await import('../errors/api-error.ts');
        throw new ApiError('not_found', { params: { resource: 'source format' } });
      }
      const plan = this.config.plans.unmetered;
      return {
        source,
        data: pairs.map((pair) => ({
          target: pair.target, max_upload_mb: plan.max_upload_mb, credit_weight: registry.creditWeight(pair), options: pair.options, variants: pair.variants,
        })),
      };
    });
  }

  getAccount(): Promise<AccountView> {
    return this.call(async () => {
      const { system, account } = await this.open();
      return system.accounts.view(account);
    });
  }

  close(): Promise<void> {
    this.closed = true;
    return (this.closing ??= this.shutDown());
  }

  private async shutDown(): Promise<void> {
    const opening = this.opening;
    if (!opening) return;
    const opened = await opening.catch(() => null);
    if (!opened) return;
    // sharp cannot abort an encode half-way: give running work a moment, then remove the
    // ephemeral data dir anyway (a late write into it fails harmlessly).
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([opened.system.stop(), new Promise((resolve) => (timer = setTimeout(resolve, CLOSE_GRACE_MS)))]);
    clearTimeout(timer);
    await opened.dataDir.remove();
  }
}

/** A stream now of a stream that opens later (a result in a bucket): errors, end and an early destroy carried over. */
function streamOf(opening: Promise<Readable>): Readable {
  const through = new PassThrough();
  opening.then((source) => {
    pipeline(source, through).catch(() => undefined);
  }, (error: unknown) => through.destroy(error instanceof Error ? error : new Error(String(error))));
  return through;
}
