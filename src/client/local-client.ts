import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ApiError } from '../errors/api-error.ts';
import { renderMessage } from '../errors/messages.ts';
import type { AccountRecord } from '../model/account.ts';
import type { PublicConversion } from '../model/conversion.ts';
import { defaultServiceConfig } from '../service/config.ts';
import type { SpooledFile } from '../service/create-request.ts';
import { openSystem, type ConversionSystem } from '../service/system.ts';
import {
  ClientError, type AccountView, type ConvClient, type CreateConversionRequest, type DownloadResult, type FormatDetails,
  type FormatListing, type ListPage,
} from './types.ts';

const CLOSE_GRACE_MS = 500;

export interface LocalClientOptions {
  workers?: number;
}

/**
 * The service in-process, for `conv` with no server configured: an ephemeral store in a temp dir
 * (nothing persists between runs), one unmetered account (no credits or limits that matter).
 * URL inputs may reach private addresses: this is the user's own machine, not a shared server.
 */
export async function createLocalClient(options: LocalClientOptions = {}): Promise<ConvClient> {
  const dataDir = await mkdtemp(join(tmpdir(), 'conv-local-'));
  const system = await openSystem({
    dataDir,
    config: defaultServiceConfig({ baseUrl: 'local:/v1', allowPrivateUrls: true, sweepIntervalMs: 3_600_000 }),
    workers: options.workers,
  });
  await system.start();
  const account = await system.accounts.createAccount({ plan: 'unmetered', name: 'local' });
  return new LocalClient(system, account, dataDir);
}

function toClientError(error: unknown): never {
  if (error instanceof ApiError) {
    throw new ClientError(error.code, renderMessage(error.code, error.params, 'en'), error.status, error.details);
  }
  throw error;
}

class LocalClient implements ConvClient {
  constructor(
    private readonly system: ConversionSystem,
    private readonly account: AccountRecord,
    private readonly dataDir: string,
  ) {}

  private async call<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      return toClientError(error);
    }
  }

  private view(record: Parameters<ConversionSystem['conversions']['publicView']>[0]): PublicConversion {
    return this.system.conversions.publicView(record);
  }

  /** Copies the input into the spool, hashing it for the idempotency fingerprint as a daemon would. */
  private async spool(source: Readable, filename: string | null): Promise<SpooledFile> {
    const path = this.system.blobs.spoolPath();
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
        files.push(await this.spool(createReadStream(input.path), input.filename ?? basename(input.path)));
      } else {
        files.push(await this.spool(input.stream, input.filename));
      }
      const outcome = await this.system.conversions.create(this.account, {
        fields, options: request.options ?? {}, files, idempotencyKey: request.idempotencyKey,
      });
      const record = await this.system.conversions.waitForEnd(outcome.record, Math.min(request.wait ?? 0, 30));
      return this.view(record);
    });
  }

  getConversion(id: string, options: { wait?: number } = {}): Promise<PublicConversion> {
    return this.call(async () => {
      const record = await this.system.conversions.get(this.account, id);
      return this.view(await this.system.conversions.waitForEnd(record, Math.min(options.wait ?? 0, 30)));
    });
  }

  listConversions(query: { status?: string; cursor?: string; limit?: number }): Promise<ListPage> {
    return this.call(() =>
      this.system.conversions.list(this.account, { status: query.status, cursor: query.cursor, limit: query.limit?.toString() }),
    );
  }

  deleteConversion(id: string): Promise<PublicConversion> {
    return this.call(async () => this.view(await this.system.conversions.delete(this.account, id)));
  }

  download(id: string): Promise<DownloadResult> {
    return this.call(async () => {
      const handle = await this.system.conversions.download(this.account, id);
      return { stream: handle.open() as Readable, filename: handle.record.result!.filename, size: handle.size };
    });
  }

  listFormats(): Promise<FormatListing> {
    return this.call(async () => this.system.conversions.listFormats());
  }

  getFormat(source: string): Promise<FormatDetails> {
    return this.call(async () => this.system.conversions.formatDetails(this.account, source));
  }

  getAccount(): Promise<AccountView> {
    return this.call(() => this.system.accounts.view(this.account));
  }

  async close(): Promise<void> {
    // sharp cannot abort an encode half-way: give running work a moment, then remove the
    // ephemeral data dir anyway (a late write into it fails harmlessly).
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.system.stop(), new Promise((resolve) => (timer = setTimeout(resolve, CLOSE_GRACE_MS)))]);
    clearTimeout(timer);
    await rm(this.dataDir, { recursive: true, force: true });
  }
}
