/**
 * The download answer (resultResponse): a small result is read whole and sent as one buffer, a
 * larger one or a range is streamed; both say the same headers, and a file gone between its size
 * and its read is the spec's 410 `expired` either way.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { describe, it } from 'node:test';
import { resultResponse } from '../../daemon/http/result-download.ts';
import { ApiError } from '../../src/errors/api-error.ts';
import type { DownloadHandle } from '../../src/service/conversion-service.ts';
import type { ConversionRecord } from '../../src/model/conversion.ts';

const gone = () => Object.assign(new Error('no such file'), { code: 'ENOENT' });

function handle(bytes: Buffer, reads: string[], overrides: Partial<DownloadHandle> = {}): DownloadHandle {
  const record = { result: { filename: 'photo.webp', size: bytes.length, mime: 'image/webp', expires_at: '2099-01-01T00:00:00.000Z' } } as unknown as ConversionRecord;
  return {
    record, size: bytes.length, localPath: null,
    open: async (range) => {
      reads.push('stream');
      return Readable.from([range ? bytes.subarray(range.start, range.end + 1) : bytes]);
    },
    readAll: async () => {
      reads.push('whole');
      return bytes;
    },
    ...overrides,
  };
}

describe('the download answer', () => {
  it('sends a result up to 1 MiB whole from one read, with the length and name (a 700 KiB page image too)', async () => {
    const page = randomBytes(700 * 1024);
    const pageReads: string[] = [];
    assert.ok(Buffer.from(await (await resultResponse(handle(page, pageReads), null, false)).arrayBuffer()).equals(page));
    assert.deepEqual(pageReads, ['whole']);
    const bytes = randomBytes(40_000);
    const reads: string[] = [];
    const response = await resultResponse(handle(bytes, reads), null, false);
    assert.deepEqual(reads, ['whole']);
    assert.equal(response.status, 200);
    assert.equal(response.headers.get('content-length'), '40000');
    assert.match(response.headers.get('content-disposition') ?? '', /photo\.webp/);
    assert.ok(Buffer.from(await response.arrayBuffer()).equals(bytes));
  });

  it('streams a large result, and a range of a small one', async () => {
    const large = randomBytes(1024 * 1024 + 1);
    const reads: string[] = [];
    const whole = await resultResponse(handle(large, reads), null, false);
    assert.deepEqual(reads, ['stream']);
    assert.equal(whole.headers.get('content-length'), String(large.length));
    const small = randomBytes(1000);
    const part = await resultResponse(handle(small, reads), { start: 10, end: 19 }, false);
    assert.deepEqual(reads, ['stream', 'stream']);
    assert.equal(part.status, 206);
    assert.equal(part.headers.get('content-range'), 'bytes 10-19/1000');
  });

  it('says the length of what the whole read got, should it differ from the size it was told', async () => {
    const bytes = randomBytes(5000);
    const reads: string[] = [];
    const response = await resultResponse(handle(bytes, reads, { readAll: async () => (reads.push('whole'), bytes.subarray(0, 10)) }), null, false);
    assert.deepEqual(reads, ['whole']);
    assert.equal(response.status, 200);
    assert.equal(response.headers.get('content-length'), '10');
    assert.ok(Buffer.from(await response.arrayBuffer()).equals(bytes.subarray(0, 10)));
  });

  it('answers 410 expired for a file gone after its size was read, whole or streamed', async () => {
    for (const [size, overrides] of [
      [100, { readAll: async () => Promise.reject(gone()) }],
      [2 * 1024 * 1024, { open: async () => Promise.reject(gone()) }],
    ] as const) {
      const error = await resultResponse(handle(randomBytes(size), [], overrides), null, false).catch((caught: unknown) => caught);
      assert.ok(error instanceof ApiError, String(error));
      assert.equal(error.code, 'expired');
    }
  });

  it('opens nothing for a HEAD', async () => {
    const reads: string[] = [];
    const response = await resultResponse(handle(randomBytes(10), reads), null, true);
    assert.deepEqual(reads, []);
    assert.equal(response.headers.get('content-length'), '10');
  });
});
