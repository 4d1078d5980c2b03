import { ConversionFailure } from '../../errors/api-error.ts';
import type { ConversionRecord } from '../../model/conversion.ts';
import { BYTES_PER_MB } from '../../model/plan.ts';
import { JobCancelled } from '../../queue/worker-pool.ts';
import type { ConversionService } from '../conversion-service.ts';
import { conversionCost } from '../credits.ts';
import type { RunTransitions } from './transitions.ts';

/** A URL input the disk has no room for, above its floor. */
function lowOnDisk(): ConversionFailure {
  return new ConversionFailure('fetch_failed', 'The server is low on disk space: the file could not be stored. Try again later.');
}

/**
 * A URL input's file fetched into the blob store, within the plan's upload size and the disk's
 * room, and the conversion moved on to processing at the cost of the size it turned out to have.
 */
export async function fetchInput(service: ConversionService, moves: RunTransitions, record: ConversionRecord, signal: AbortSignal): Promise<ConversionRecord> {
  if (record.input.kind !== 'url') return record;
  const { blobs, config, registry } = service;
  const account = await service.accounts.currentAccount(record.account_id);
  const plan = config.plans[account?.plan ?? 'unmetered'];
  const spool = blobs.spoolPath();
  // got and the SSRF agents load with the first URL input, not with every in-process CLI run.
  const { fetchUrlToFile } = await import('../../inputs/fetch-url.ts');
  try {
    const planMax = plan.max_upload_mb * BYTES_PER_MB;
    // A URL's file is spooled no further than the disk floor allows (as an upload's is).
    const room = service.diskRoom.headroom();
    if (room <= 0) throw lowOnDisk();
    const fetched = await fetchUrlToFile(record.input.url, spool, {
      maxBytes: Math.min(planMax, room),
      timeoutMs: config.urlFetchTimeoutMs,
      allowPrivate: config.allowPrivateUrls,
      allowedNetworks: config.urlAllowNetworks,
      signal,
    }).catch((error: unknown) => {
      if (room < planMax && error instanceof ConversionFailure && error.code === 'file_too_large') throw lowOnDisk();
      throw error;
    });
    await blobs.adoptInput(record.id, spool);
    const pair = registry.pairFor(record.source, record.target, record.options)!;
    const cost = plan.credits_type === 'unmetered' ? 0 : conversionCost(registry.creditWeight(pair), fetched.bytes);
    const moved = await moves.fetched(record.id, fetched.bytes, cost, account);
    if (!moved) throw signal.reason ?? new JobCancelled(record.id, 'cancelled');
    return moved;
  } finally {
    await blobs.discardSpool(spool);
  }
}
