/**
 * Warms a bench's daemon the way a service that has run a while is warm: small image conversions
 * (a 64x64 PNG -> WebP submitted with `wait`, then downloaded, 4 in flight) through the same HTTP,
 * store, queue and runner code every conversion takes. V8 runs a function in its interpreter or
 * baseline tier until it has run long enough to be optimised: after 300 such conversions the
 * daemon's main thread still spent 2.9 ms on each, after 4,000 1.6 ms (docs/benchmarks.md,
 * 2026-12-04 evening). A bench that times a few dozen documents after a handful of untimed ones
 * would measure a daemon just started.
 */
import type { BenchDaemon } from './daemon.ts';
import { json, multipartBody } from './http.ts';
import { WireConnection } from './http-wire.ts';
import { photoPng } from './images.ts';

const PARALLEL = 4;
const WARM_CONVERSIONS = 3000;

export async function warmDaemon(daemon: BenchDaemon, count = WARM_CONVERSIONS): Promise<{ ms: number; note: string }> {
  const png = await photoPng(64, 64, 11);
  const { contentType, body } = multipartBody({ target: 'webp', wait: '30' }, 'warm.png', 'image/png', png);
  const auth = { authorization: `Bearer ${daemon.apiKey}` };
  const connections = Array.from({ length: PARALLEL }, () => new WireConnection(daemon.host, daemon.port));
  const started = performance.now();
  let next = 0;
  try {
    await Promise.all(connections.map(async (connection) => {
      while (next++ < count) {
        const created = await connection.request('POST', '/v1/conversions', { ...auth, 'content-type': contentType }, body);
        const conversion = json<{ id: string; status: string }>(created);
        if (created.status !== 200 || conversion.status !== 'succeeded') throw new Error(`a warm-up conversion answered ${created.status} ${conversion.status}`);
        const download = await connection.request('GET', `/v1/conversions/${conversion.id}/download`, auth);
        if (download.status !== 200) throw new Error(`a warm-up download answered ${download.status}`);
      }
    }));
  } finally {
    for (const connection of connections) connection.close();
  }
  const ms = performance.now() - started;
  return { ms, note: `the daemon warmed first by ${count.toLocaleString('en-US')} small image conversions (${(ms / 1000).toFixed(1)} s), as a service that has run a while is (bench/lib/warm-daemon.ts)` };
}
