import { FastResponse } from 'srvx';
import { ApiError } from '../../src/errors/api-error.ts';
import type { DownloadHandle } from '../../src/service/conversion-service.ts';
import { attachmentHeader } from './content-disposition.ts';

/**
 * Results up to this size are read whole and sent as one buffer rather than streamed: one hop
 * to the thread pool and one socket write where a 700 KiB page image took three of each, one
 * after the other, on the way to a client that waits for it. A slow client holds up to this much
 * (a stream holds about two 256 KiB chunks).
 */
const WHOLE_READ_BYTES = 1024 * 1024;

/**
 * A conversion's result as an answer (GET /v1/conversions/{id}/download and the web pages'
 * download link): the whole file or the inclusive `range` (206), headers only for a HEAD.
 */
export async function resultResponse(download: DownloadHandle, range: { start: number; end: number } | null, headOnly: boolean): Promise<Response> {
  const headers: Record<string, string> = {
    'content-type': 'application/octet-stream',
    'content-disposition': attachmentHeader(download.record.result!.filename),
    'accept-ranges': 'bytes',
    'content-length': String(range ? range.end - range.start + 1 : download.size),
    'cache-control': 'private, no-store',
    'x-content-type-options': 'nosniff',
  };
  if (range) headers['content-range'] = `bytes ${range.start}-${range.end}/${download.size}`;
  const status = range ? 206 : 200;
  // The file's size was just read (ConversionService.download): a HEAD has what it asked for without opening the file.
  if (headOnly) return new FastResponse(null, { status, headers });
  // Opened (or read) before the answer starts: a file gone meanwhile (expired, deleted) is the
  // spec's 410, not a 500 with an empty body after the headers of a 200 were promised.
  try {
    // A small result whole in one read: a stream's setup and its pipe into the socket (an
    // AbortController and its DOMException for each) cost more than the bytes themselves.
    if (!range && download.size <= WHOLE_READ_BYTES) {
      const bytes = await download.readAll();
      // The length of what was read: a result is written once, so it is the size told above.
      headers['content-length'] = String(bytes.length);
      return new FastResponse(bytes, { status, headers });
    }
    const stream = await download.open(range ?? undefined);
    // srvx pipes a Node stream body straight into the socket; a web stream (Readable.toWeb)
    // would copy every chunk through the web streams machinery and back.
    return new FastResponse(stream as unknown as ConstructorParameters<typeof FastResponse>[0], { status, headers });
  } catch (error) {
    // Gone (expired, deleted meanwhile) is 410; a bucket that does not answer is not that.
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw new ApiError('expired');
    throw error;
  }
}
