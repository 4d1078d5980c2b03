import type { IncomingMessage } from 'node:http';
import type { ApiError } from '../../src/errors/api-error.ts';
import type { AccountRecord } from '../../src/model/account.ts';
import type { ConversionService } from '../../src/service/conversion-service.ts';
import type { UploadHold } from '../../src/service/upload-holds.ts';
import { LOW_DISK_RETRY_AFTER, type SpoolMeter, type UploadSpace } from '../ops/disk-space.ts';
import { announcedUpload } from './body.ts';
import type { MultipartLimits } from './multipart.ts';
import { refusalError } from './refusal.ts';

export interface AdmittedUpload {
  /** The upload's place among the account's active conversions; null for an idempotent replay. */
  hold: UploadHold | null;
  meter: SpoolMeter;
  /** For the multipart parser: a chunk that would take free space below the floor stops the upload. */
  onFileBytes(bytes: number): ApiError | undefined;
}

const lowDisk = () => refusalError({ reason: 'low_disk_space', retryAfter: LOW_DISK_RETRY_AFTER });

/**
 * What an upload must pass before a byte of its body is read, in this order: its announced size
 * (413), the account's limits with uploads in flight counted (429, 402; the rules are
 * ConversionService.admitUpload's), and the disk floor less the announced size and what other
 * uploads still announce (503 low_disk_space). Null for a request that is no upload.
 */
export async function admitUpload(
  conversions: ConversionService,
  space: UploadSpace,
  account: AccountRecord,
  req: IncomingMessage,
  limits: Pick<MultipartLimits, 'maxFileBytes' | 'maxFileMb'>,
  idempotencyKey: string | undefined,
  /** How long a duplicate (same key) waits for its twin in flight: the time a body may stall. */
  patienceMs: number,
): Promise<AdmittedUpload | null> {
  const announced = announcedUpload(req, limits);
  if (!announced) return null;
  const hold = await conversions.admitUpload(account, { fileBytes: announced.fileBytes, idempotencyKey, patienceMs });
  // A replay is answered with its original conversion, not refused for what it announces; the
  // bytes it does send are metered like any others.
  const meter = space.beginUpload(announced.bodyBytes, hold !== null);
  if (!meter) {
    hold?.release();
    throw lowDisk();
  }
  return { hold, meter, onFileBytes: (bytes) => (meter.take(bytes) ? undefined : lowDisk()) };
}
