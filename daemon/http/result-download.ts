import type { Readable } from 'node:stream';
import { FastResponse } from 'srvx';
import { ApiError } from '../../src/errors/api-error.ts';
import type { DownloadHandle } from '../../src/service/conversion-service.ts';
import { attachmentHeader } from './content-disposition.ts';

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
  // The file's size was just read: a HEAD has what it asked for without opening the file.
  if (headOnly) return new FastResponse(null, { status, headers });
  // Opened before the answer starts: a file gone meanwhile (expired, deleted) is the spec's
  // 410, not a 500 with an empty body after the headers of a 200 were promised.
  let stream: Readable;
  try {
    stream = await download.open(range ?? undefined);
  } catch (error) {
    // Gone (expired, deleted meanwhile) is 410; a bucket that does not answer is not that.
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw new ApiError('expired');
    throw error;
  }
  // srvx pipes a Node stream body straight into the socket; a web stream (Readable.toWeb)
  // would copy every chunk through the web streams machinery and back.
  return new FastResponse(stream as unknown as ConstructorParameters<typeof FastResponse>[0], { status, headers });
}
