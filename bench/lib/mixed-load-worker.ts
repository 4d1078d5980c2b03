/**
 * The load generator of bench/load.ts, run as its own process: closed-loop virtual clients that
 * each submit a small PNG, poll it to its end, download the result (checked: its size is the
 * result's, and it decodes as WebP of the submitted dimensions), and now and then list. A client
 * that is refused with 429 waits the Retry-After it was given, as a well-behaved client does.
 *
 * Input: one JSON argument (MixedPlan). Output: one JSON line (MixedResult) on stdout.
 */
import { pathToFileURL } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import sharp from 'sharp';
import { json, multipartBody, send, type Answer } from './http.ts';
import { photoPng } from './images.ts';

export interface MixedPlan {
  host: string;
  port: number;
  /** One entry per virtual client: the key it uses and whether its plan may refuse it (429). */
  clients: { apiKey: string; limited: boolean }[];
  durationMs: number;
  /** Spacing of polls of one conversion, so a client's mix stays bounded. */
  pollIntervalMs: number;
}

export type Kind = 'submit' | 'poll' | 'download' | 'list';

export interface MixedResult {
  elapsedMs: number;
  requests: number;
  /** Per kind: count, statuses, latency percentiles (ms). */
  kinds: Record<Kind, { count: number; statuses: Record<string, number>; p50: number; p99: number }>;
  p50: number;
  p99: number;
  conversions: { submitted: number; succeeded: number; downloaded: number };
  /** Answers refused by the plan of a limited client: by code, and how many lacked Retry-After. */
  limited: { answered: number; refused: number; codes: Record<string, number>; withoutRetryAfter: number };
  errors: number;
  /** The first errors, to say what went wrong. */
  errorSamples: string[];
}

interface Conversion {
  id: string;
  status: string;
  result: { size: number } | null;
}

const WIDTH = 64;
const HEIGHT = 48;
const END = new Set(['succeeded', 'failed', 'cancelled', 'expired']);

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

export async function runMixed(plan: MixedPlan): Promise<MixedResult> {
  const png = await photoPng(WIDTH, HEIGHT, 7);
  const latencies: Record<Kind, number[]> = { submit: [], poll: [], download: [], list: [] };
  const statuses: Record<Kind, Record<string, number>> = { submit: {}, poll: {}, download: {}, list: {} };
  const result: MixedResult = {
    elapsedMs: 0, requests: 0, kinds: {} as MixedResult['kinds'], p50: 0, p99: 0,
    conversions: { submitted: 0, succeeded: 0, downloaded: 0 },
    limited: { answered: 0, refused: 0, codes: {}, withoutRetryAfter: 0 },
    errors: 0, errorSamples: [],
  };
  const started = performance.now();
  const stopAt = started + plan.durationMs;
  const base = { host: plan.host, port: plan.port };

  const error = (text: string) => {
    result.errors++;
    if (result.errorSamples.length < 20) result.errorSamples.push(text);
  };

  /** One request, timed and counted; 429 on a limited client is the plan at work, not an error. */
  const request = async (client: MixedPlan['clients'][number], kind: Kind, method: string, path: string, headers: Record<string, string> = {}, body?: Buffer): Promise<Answer | null> => {
    const t = performance.now();
    let answer: Answer;
    try {
      answer = await send(base, method, path, { authorization: `Bearer ${client.apiKey}`, ...headers }, body);
    } catch (cause) {
      error(`${kind} ${path}: ${String(cause)}`);
      return null;
    }
    latencies[kind].push(performance.now() - t);
    statuses[kind][answer.status] = (statuses[kind][answer.status] ?? 0) + 1;
    result.requests++;
    if (client.limited) {
      result.limited.answered++;
      if (answer.status === 429) {
        result.limited.refused++;
        const code = (json<{ error?: { code?: string } }>(answer).error?.code) ?? '(none)';
        result.limited.codes[code] = (result.limited.codes[code] ?? 0) + 1;
        if (!/^\d+$/.test(String(answer.headers['retry-after'] ?? ''))) result.limited.withoutRetryAfter++;
        if (code !== 'rate_limited' && code !== 'concurrency_limit') error(`${kind}: 429 with code ${code}`);
        // Waits as told, but not past the end of the run.
        await sleep(Math.max(0, Math.min(Number(answer.headers['retry-after'] ?? 1) * 1000, stopAt - performance.now())));
        return null;
      }
    }
    return answer;
  };

  const runClient = async (client: MixedPlan['clients'][number], index: number) => {
    let loops = 0;
    while (performance.now() < stopAt) {
      loops++;
      const { contentType, body } = multipartBody({ target: 'webp' }, `load-${index}-${loops}.png`, 'image/png', png);
      const submitted = await request(client, 'submit', 'POST', '/v1/conversions', { 'content-type': contentType }, body);
      if (!submitted) continue;
      if (submitted.status !== 202 && submitted.status !== 200) {
        error(`submit: ${submitted.status} ${submitted.body.toString('utf8').slice(0, 200)}`);
        continue;
      }
      result.conversions.submitted++;
      let conversion = json<Conversion>(submitted);
      while (!END.has(conversion.status) && performance.now() < stopAt + 30_000) {
        await sleep(plan.pollIntervalMs);
        const polled = await request(client, 'poll', 'GET', `/v1/conversions/${conversion.id}`);
        if (!polled) continue;
        if (polled.status !== 200) {
          error(`poll: ${polled.status} ${polled.body.toString('utf8').slice(0, 200)}`);
          break;
        }
        conversion = json<Conversion>(polled);
      }
      if (conversion.status !== 'succeeded') {
        if (END.has(conversion.status)) error(`conversion ${conversion.id} ended ${conversion.status}`);
        continue;
      }
      result.conversions.succeeded++;
      // A refused download (limited client) is tried again after its wait: the result is there to be fetched.
      let downloaded: Answer | null = null;
      while (!downloaded && performance.now() < stopAt + 30_000) downloaded = await request(client, 'download', 'GET', `/v1/conversions/${conversion.id}/download`);
      if (!downloaded) continue;
      if (downloaded.status !== 200 || downloaded.body.length !== conversion.result?.size) {
        error(`download ${conversion.id}: ${downloaded.status}, ${downloaded.body.length} bytes, result says ${conversion.result?.size}`);
        continue;
      }
      const meta = await sharp(downloaded.body).metadata().catch(() => null);
      if (meta?.format !== 'webp' || meta.width !== WIDTH || meta.height !== HEIGHT) {
        error(`download ${conversion.id}: not a ${WIDTH}x${HEIGHT} webp (${meta?.format} ${meta?.width}x${meta?.height})`);
        continue;
      }
      result.conversions.downloaded++;
      if (loops % 10 === 0) {
        const listed = await request(client, 'list', 'GET', '/v1/conversions?limit=20');
        if (listed && listed.status !== 200) error(`list: ${listed.status}`);
      }
    }
  };

  await Promise.all(plan.clients.map((client, index) => runClient(client, index)));
  result.elapsedMs = performance.now() - started;
  const all: number[] = [];
  for (const kind of Object.keys(latencies) as Kind[]) {
    const sorted = Float64Array.from(latencies[kind]).sort();
    result.kinds[kind] = { count: sorted.length, statuses: statuses[kind], p50: percentile(sorted, 50), p99: percentile(sorted, 99) };
    all.push(...latencies[kind]);
  }
  const sorted = Float64Array.from(all).sort();
  result.p50 = percentile(sorted, 50);
  result.p99 = percentile(sorted, 99);
  return result;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const plan = JSON.parse(process.argv[2]!) as MixedPlan;
  process.stdout.write(`${JSON.stringify(await runMixed(plan))}\n`);
  process.exit(0);
}
