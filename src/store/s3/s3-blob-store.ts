import { randomUUID } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, rm, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { pipeline } from 'node:stream/promises';
import {
  DeleteObjectCommand, GetObjectCommand, HeadBucketCommand, HeadObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import type { BlobKind, BlobStore, LocalFile } from '../blob-store.ts';
import { parseBlobUrl, type BlobLocation } from './blob-url.ts';
import { reasonOf, StoreUnavailableError } from '../unavailable.ts';


const SAFE_ID = /^[a-z0-9_]+$/i;
/** Multipart parts: 8 MiB each, two in flight, so an upload holds at most 16 MiB in memory. */
const PART_SIZE = 8 * 1024 * 1024;
const PARTS_IN_FLIGHT = 2;

/**
 * Inputs and results in an S3-compatible bucket (several nodes share it), under
 * `<prefix>inputs/<id>` and `<prefix>results/<id>`: every node that shares the bucket reads the
 * same files. Spooled uploads and engine outputs stay on this node's disk only while they are
 * in progress (`<root>/spool`, `<root>/work`); a file goes up in parts (a bounded buffer, never
 * whole in memory), an engine reads a local copy that is removed after its run, and a download
 * streams from the bucket with its byte range.
 */
export class S3BlobStore implements BlobStore {
  private constructor(
    private readonly client: S3Client,
    private readonly location: BlobLocation,
    private readonly root: string,
  ) {}

  /** `url`: `s3://bucket/prefix?endpoint=…&region=…&force_path_style=true`; credentials from the AWS environment. */
  static async open(url: string, root: string): Promise<S3BlobStore> {
    const location = parseBlobUrl(url);
    // The SDK warns once per process that its releases after January 2027 need Node 22; the
    // version in the lockfile supports Node 20 (docs/operations.md says what an upgrade needs).
    process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
    const client = new S3Client({
      region: location.region ?? process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION ?? 'us-east-1',
      ...(location.endpoint ? { endpoint: location.endpoint } : {}),
      forcePathStyle: location.forcePathStyle,
      // Checksums only where S3 requires them: S3-compatible servers do not all read the trailers.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    });
    for (const dir of ['spool', 'work']) await mkdir(join(root, dir), { recursive: true, mode: 0o700 });
    const store = new S3BlobStore(client, location, root);
    await store.ping().catch((error: unknown) => {
      client.destroy();
      const where = `bucket ${location.bucket}${location.endpoint ? ` at ${location.endpoint}` : ''}`;
      throw new StoreUnavailableError(`cannot use the ${where}: ${reasonOf(error)}`, { cause: error });
    });
    return store;
  }

  /** The bucket answers (for /readyz and at start). */
  async ping(): Promise<void> {
    await this.client.send(new HeadBucketCommand({ Bucket: this.location.bucket }));
  }

  private key(kind: BlobKind, id: string): string {
    if (!SAFE_ID.test(id)) throw new Error(`unsafe blob id ${JSON.stringify(id)}`);
    return `${this.location.prefix}${kind}/${id}`;
  }

  private async upload(kind: BlobKind, id: string, path: string): Promise<void> {
    const upload = new Upload({
      client: this.client,
      params: { Bucket: this.location.bucket, Key: this.key(kind, id), Body: createReadStream(path) },
      partSize: PART_SIZE,
      queueSize: PARTS_IN_FLIGHT,
    });
    await upload.done();
    await unlinkIfThere(path);
  }

  spoolPath(): string {
    return join(this.root, 'spool', randomUUID());
  }

  async adoptInput(id: string, spooledPath: string): Promise<void> {
    await this.upload('inputs', id, spooledPath);
  }

  async adoptInputBytes(id: string, bytes: Uint8Array): Promise<void> {
    await this.client.send(new PutObjectCommand({ Bucket: this.location.bucket, Key: this.key('inputs', id), Body: bytes }));
  }

  async localInput(id: string): Promise<LocalFile> {
    const path = join(this.root, 'work', `${id}-input-${randomUUID().slice(0, 8)}`);
    try {
      await pipeline(await this.openRead('inputs', id), createWriteStream(path, { mode: 0o600 }));
    } catch (error) {
      await unlinkIfThere(path);
      throw error;
    }
    return { path, release: () => unlinkIfThere(path) };
  }

  outputPathFor(id: string, extension: string): string {
    if (!SAFE_ID.test(id) || !/^[a-z0-9]+$/i.test(extension)) throw new Error(`unsafe output name ${id}.${extension}`);
    return join(this.root, 'work', `${id}-${randomUUID().slice(0, 8)}.${extension}`);
  }

  async workDirFor(id: string): Promise<string> {
    if (!SAFE_ID.test(id)) throw new Error(`unsafe blob id ${JSON.stringify(id)}`);
    const dir = join(this.root, 'work', `${id}-${randomUUID().slice(0, 8)}`);
    await mkdir(dir, { mode: 0o700 });
    return dir;
  }

  async adoptResult(id: string, outputPath: string): Promise<void> {
    await this.upload('results', id, outputPath);
  }

  async exists(kind: BlobKind, id: string): Promise<boolean> {
    return (await this.size(kind, id)) !== null;
  }

  async size(kind: BlobKind, id: string): Promise<number | null> {
    try {
      const head = await this.client.send(new HeadObjectCommand({ Bucket: this.location.bucket, Key: this.key(kind, id) }));
      return head.ContentLength ?? null;
    } catch (error) {
      if (isNotFound(error)) return null;
      throw error;
    }
  }

  async openRead(kind: BlobKind, id: string, range?: { start: number; end: number }): Promise<Readable> {
    const got = await this.client.send(new GetObjectCommand({
      Bucket: this.location.bucket,
      Key: this.key(kind, id),
      ...(range ? { Range: `bytes=${range.start}-${range.end}` } : {}),
    })).catch((error: unknown) => {
      throw isNotFound(error) ? Object.assign(new Error(`no ${kind} object ${id}`), { code: 'ENOENT' }) : error;
    });
    // In Node the SDK's body is the response's IncomingMessage, a Readable.
    return got.Body as Readable;
  }

  async readAll(kind: BlobKind, id: string): Promise<Buffer> {
    return buffer(await this.openRead(kind, id));
  }

  localPath(): null {
    return null;
  }

  async delete(kind: BlobKind, id: string): Promise<void> {
    await this.client.send(new DeleteObjectCommand({ Bucket: this.location.bucket, Key: this.key(kind, id) }));
  }

  async discardOutput(path: string): Promise<void> {
    await unlinkIfThere(path);
  }

  async discardSpool(path: string): Promise<void> {
    await unlinkIfThere(path);
  }

  async list(kind: BlobKind): Promise<string[]> {
    const ids: string[] = [];
    const prefix = `${this.location.prefix}${kind}/`;
    let token: string | undefined;
    do {
      const page = await this.client.send(new ListObjectsV2Command({ Bucket: this.location.bucket, Prefix: prefix, ContinuationToken: token }));
      for (const item of page.Contents ?? []) {
        const id = item.Key?.slice(prefix.length);
        if (id && SAFE_ID.test(id)) ids.push(id);
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return ids;
  }

  async clearScratch(): Promise<void> {
    for (const dir of ['spool', 'work']) {
      await rm(join(this.root, dir), { recursive: true, force: true });
      await mkdir(join(this.root, dir), { recursive: true, mode: 0o700 });
    }
  }
}

function isNotFound(error: unknown): boolean {
  const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
  return status === 404 || (error instanceof Error && (error.name === 'NotFound' || error.name === 'NoSuchKey'));
}

async function unlinkIfThere(path: string): Promise<void> {
  try {
    await unlink(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
}
