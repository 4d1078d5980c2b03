/**
 * A keep-alive HTTP/1.1 load generator, run as its own process so it never shares a CPU budget
 * with the server under test. Each connection sends one GET, reads the whole answer (content
 * length or chunked), then sends the next: a closed loop, bounded by time. Raw sockets rather
 * than node:http's client, which would cost more CPU per request than the server it measures.
 *
 * Input: one JSON argument (LoadPlan). Output: one JSON line (LoadResult) on stdout.
 */
import { connect, type Socket } from 'node:net';
import { pathToFileURL } from 'node:url';
import { parseResponse } from './http-wire.ts';

export interface LoadTarget {
  path: string;
  headers: Record<string, string>;
}

export interface LoadPlan {
  host: string;
  port: number;
  /** One target per connection, round robin (e.g. one account per connection). */
  targets: LoadTarget[];
  connections: number;
  warmupMs: number;
  durationMs: number;
}

export interface LoadResult {
  requests: number;
  elapsedMs: number;
  statuses: Record<string, number>;
  errors: number;
  bodyBytes: number;
}

function requestBytes(plan: LoadPlan, target: LoadTarget): Buffer {
  const lines = [`GET ${target.path} HTTP/1.1`, `Host: ${plan.host}:${plan.port}`, 'Connection: keep-alive'];
  for (const [name, value] of Object.entries(target.headers)) lines.push(`${name}: ${value}`);
  return Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1');
}

export async function runLoad(plan: LoadPlan): Promise<LoadResult> {
  const result: LoadResult = { requests: 0, elapsedMs: 0, statuses: {}, errors: 0, bodyBytes: 0 };
  const started = performance.now();
  const measureFrom = started + plan.warmupMs;
  const stopAt = measureFrom + plan.durationMs;

  const runConnection = (index: number) =>
    new Promise<void>((resolve) => {
      const request = requestBytes(plan, plan.targets[index % plan.targets.length]!);
      const socket: Socket = connect({ host: plan.host, port: plan.port, noDelay: true });
      let pending: Buffer = Buffer.alloc(0);
      socket.on('connect', () => socket.write(request));
      socket.on('data', (chunk: Buffer) => {
        pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
        for (;;) {
          let response;
          try {
            response = parseResponse(pending);
          } catch (error) {
            socket.destroy(error as Error); // counted as an error by the 'error' listener
            return;
          }
          if (!response) return;
          pending = pending.subarray(response.length);
          const now = performance.now();
          if (now >= measureFrom && now < stopAt) {
            result.requests++;
            result.bodyBytes += response.bodyBytes;
            result.statuses[response.status] = (result.statuses[response.status] ?? 0) + 1;
          }
          if (now >= stopAt) {
            socket.end();
            return;
          }
          socket.write(request);
        }
      });
      socket.on('error', () => {
        result.errors++;
        resolve();
      });
      socket.on('close', () => resolve());
    });

  await Promise.all(Array.from({ length: plan.connections }, (_, index) => runConnection(index)));
  result.elapsedMs = plan.durationMs;
  return result;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const plan = JSON.parse(process.argv[2]) as LoadPlan;
  process.stdout.write(`${JSON.stringify(await runLoad(plan))}\n`);
}
