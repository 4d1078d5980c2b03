/**
 * An S3-protocol server for the suites (s3rver, in this process, on 127.0.0.1 with a directory of
 * its own): a bucket, the blob URL that names it for convd, the environment a daemon needs for
 * its credentials, and a client to look into the bucket from the test.
 */
import { rmSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateBucketCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
// s3rver ships no types: the two calls used here, typed by hand.
// @ts-expect-error: no declaration file
import S3rverModule from 's3rver';

interface S3rverInstance {
  run(): Promise<{ port: number }>;
  close(): Promise<void>;
  httpServer?: { unref(): void };
}
const S3rver = S3rverModule as new (options: Record<string, unknown>) => S3rverInstance;

/** s3rver's fixed credentials: any other pair is refused. */
export const S3_ENV = { AWS_ACCESS_KEY_ID: 'S3RVER', AWS_SECRET_ACCESS_KEY: 'S3RVER', AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' } as const;

export interface TestBucket {
  endpoint: string;
  bucket: string;
  /** Where s3rver keeps the objects (a temp dir of its own). */
  directory: string;
  /** `s3://bucket/prefix?endpoint=…&region=us-east-1` */
  blobUrl(prefix?: string): string;
  /**
   * Puts `.keep` objects in the prefix's inputs/ and results/ (convd never lists or deletes a key
   * that is not an id). s3rver keeps objects as files and removes a directory left empty by a
   * DELETE, while a PUT into it may be opening its file: an ENOENT thrown in this process. A
   * directory that never empties avoids that race of the test server (S3 has no directories).
   */
  keepDirs(prefix: string): Promise<void>;
  /** Keys under a prefix, sorted. */
  keys(prefix?: string): Promise<string[]>;
  client: S3Client;
  close(): Promise<void>;
}

let shared: Promise<TestBucket> | null = null;

/**
 * One bucket for every daemon a test process starts in the PostgreSQL + S3 mode (each under a
 * prefix of its own); it does not keep the process alive and goes with it.
 */
export function sharedBucket(): Promise<TestBucket> {
  shared ??= startS3('convd-shared', { unref: true }).then((bucket) => {
    // Never closed (it goes with the process): its files go when the process exits.
    process.once('exit', () => rmSync(bucket.directory, { recursive: true, force: true }));
    return bucket;
  });
  return shared;
}

export async function startS3(bucket = 'convd-test', options: { unref?: boolean } = {}): Promise<TestBucket> {
  Object.assign(process.env, { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' });
  const directory = await mkdtemp(join(tmpdir(), 'convd-s3-'));
  const server = new S3rver({ port: 0, address: '127.0.0.1', silent: true, directory });
  const { port } = await server.run();
  if (options.unref) server.httpServer?.unref();
  const endpoint = `http://127.0.0.1:${port}`;
  const client = new S3Client({
    endpoint, region: 'us-east-1', forcePathStyle: true,
    credentials: { accessKeyId: S3_ENV.AWS_ACCESS_KEY_ID, secretAccessKey: S3_ENV.AWS_SECRET_ACCESS_KEY },
    requestChecksumCalculation: 'WHEN_REQUIRED', responseChecksumValidation: 'WHEN_REQUIRED',
  });
  await client.send(new CreateBucketCommand({ Bucket: bucket }));
  return {
    endpoint,
    bucket,
    client,
    directory,
    blobUrl: (prefix = '') => `s3://${bucket}/${prefix}?endpoint=${encodeURIComponent(endpoint)}&region=us-east-1`,
    async keepDirs(prefix) {
      for (const dir of ['inputs', 'results']) await client.send(new PutObjectCommand({ Bucket: bucket, Key: `${prefix}/${dir}/.keep`, Body: '' }));
    },
    async keys(prefix = '') {
      const listed = await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix }));
      return (listed.Contents ?? []).map((item) => item.Key ?? '').sort();
    },
    async close() {
      client.destroy();
      await server.close();
      await rm(directory, { recursive: true, force: true });
    },
  };
}
