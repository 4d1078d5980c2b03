/**
 * service-cost: the daemon's own CPU per request and per small conversion, part by part, each
 * against a bare node:http server (bench/lib/bare-server.ts, a process of its own) answering the
 * same bytes to the same client: the least any Node HTTP service pays on this machine.
 *
 * The client is the benches' raw keep-alive one (bench/lib/http-wire.ts), CONNECTIONS requests in
 * flight, each waiting for its answer: the way a conversion's client talks (submit, then
 * download), where every request wakes the server alone. Parts:
 * - read: GET /v1/conversions/{id} of a succeeded conversion;
 * - download: GET .../download of a 480x360 WebP (about 17 KiB);
 * - upload: a multipart POST of the convert-e2e bench's 480x360 photo PNG (about 440 KiB here),
 *   refused once read (an unknown target: the file is spooled, the request validated, the file
 *   removed), against the bare server reading the same body;
 * - conversion: a 64x64 PNG -> WebP, submitted with `wait` and downloaded, against the bare
 *   server's two answers plus sharp converting the same PNG in this process (its CPU per image).
 *
 * Judged: the conversion's daemon CPU less sharp's, the issue's "service's own CPU per
 * conversion" (at most SERVICE_CPU_TARGET_MS). The ratio is the conversion's daemon CPU against
 * the bare server's two answers and sharp's. Every figure is CPU time from /proc (user + system)
 * per request, the lowest of ROUNDS alternating rounds; the note names the data dir's file
 * system, which decides what creating a file costs.
 */
import { join } from 'node:path';
import sharp from 'sharp';
import { cpuTimeMs } from './lib/cpu.ts';
import { ROOT, startBenchDaemon, type BenchDaemon } from './lib/daemon.ts';
import { steadyDataDir } from './lib/steady-data-dir.ts';
import { describeFileSystem } from './lib/file-system.ts';
import { json, multipartBody } from './lib/http.ts';
import { WireConnection, type WireAnswer } from './lib/http-wire.ts';
import { photoPng } from './lib/images.ts';
import { removeDir, spawnTracked, stopChild, tempDir } from './lib/processes.ts';
import { SERVICE_CPU_TARGET_MS, type BenchResult } from './types.ts';

const CONNECTIONS = 4;
const ROUNDS = 3;
/** Requests per round of each part (after as many untimed, half as many in later rounds). */
const COUNTS = { read: 2000, download: 2000, upload: 400, conversion: 500 } as const;
type Part = keyof typeof COUNTS;

interface Bare {
  pid: number;
  port: number;
  stop: () => Promise<void>;
}

/** A bare node:http server answering every request with `body` (and draining any request body). */
async function startBare(body: Buffer, contentType: string): Promise<Bare> {
  const child = spawnTracked(process.execPath, ['--import', 'tsx', join(ROOT, 'bench', 'lib', 'bare-server.ts'), JSON.stringify({ body: body.toString('latin1'), headers: { 'content-type': contentType }, encoding: 'latin1' })], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout!.once('data', (chunk: Buffer) => resolve(Number(chunk.toString().trim())));
    child.once('exit', (code) => reject(new Error(`bare server exited with ${code}`)));
  });
  return { pid: child.pid!, port, stop: () => stopChild(child) };
}

/** `count` requests over `connections`, each connection one at a time; `request` throws on a wrong answer. */
async function drive(connections: WireConnection[], count: number, request: (connection: WireConnection, index: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(connections.map(async (connection) => {
    while (next < count) await request(connection, next++);
  }));
}

/** CPU (ms) the processes `pids` spent per request over `count` requests. */
async function cpuPer(pids: number[], count: number, work: () => Promise<void>): Promise<number> {
  const cpu = async () => (await Promise.all(pids.map(cpuTimeMs))).reduce((sum, ms) => sum + ms, 0);
  const before = await cpu();
  await work();
  return ((await cpu()) - before) / count;
}

function expect(answer: WireAnswer, status: number, what: string): void {
  if (answer.status !== status) throw new Error(`${what}: answered ${answer.status}, expected ${status}: ${answer.body.toString('utf8').slice(0, 200)}`);
}

export async function benchServiceCost(): Promise<BenchResult> {
  const dir = await tempDir('cost');
  const bares: Bare[] = [];
  let daemon: BenchDaemon | null = null;
  const connections: WireConnection[] = [];
  const bareWires: WireConnection[] = [];
  try {
    const photo = await photoPng(480, 360, 7);
    const small = await photoPng(64, 64, 3);
    const steady = await steadyDataDir(join(dir, 'data'));
    daemon = await startBenchDaemon({ dataDir: join(dir, 'data'), apiKey: steady.apiKey, args: ['--workers', String(CONNECTIONS)] });
    const d = daemon;
    const auth = { authorization: `Bearer ${d.apiKey}` };
    for (let index = 0; index < CONNECTIONS; index++) connections.push(new WireConnection(d.host, d.port));
    const first = connections[0]!;

    // What the parts read and download: one conversion of each image, and their answers' bytes.
    const submit = (png: Buffer, target: string, connection: WireConnection) => {
      const { contentType, body } = multipartBody({ target, wait: '30' }, 'photo.png', 'image/png', png);
      return connection.request('POST', '/v1/conversions', { ...auth, 'content-type': contentType }, body);
    };
    const photoAnswer = await submit(photo, 'webp', first);
    expect(photoAnswer, 200, 'the 480x360 conversion');
    const photoId = json<{ id: string }>(photoAnswer).id;
    const photoResult = await first.request('GET', `/v1/conversions/${photoId}/download`, auth);
    expect(photoResult, 200, 'its download');
    const readAnswer = await first.request('GET', `/v1/conversions/${photoId}`, auth);
    const refused = await submit(photo, 'no-such-format', first);
    const smallAnswer = await submit(small, 'webp', first);
    expect(smallAnswer, 200, 'the 64x64 conversion');
    const smallResult = await first.request('GET', `/v1/conversions/${json<{ id: string }>(smallAnswer).id}/download`, auth);

    const bareRead = await startBare(readAnswer.body, 'application/json');
    const bareDownload = await startBare(photoResult.body, 'application/octet-stream');
    const bareRefusal = await startBare(refused.body, 'application/json');
    const bareSmallResult = await startBare(smallResult.body, 'application/octet-stream');
    bares.push(bareRead, bareDownload, bareRefusal, bareSmallResult);
    const bareConnections = (bare: Bare) => {
      const opened = Array.from({ length: CONNECTIONS }, () => new WireConnection('127.0.0.1', bare.port));
      bareWires.push(...opened);
      return opened;
    };
    const wires = new Map(bares.map((bare) => [bare, bareConnections(bare)]));

    const refusedBody = multipartBody({ target: 'no-such-format' }, 'photo.png', 'image/png', photo);
    const smallBody = multipartBody({ target: 'webp', wait: '30' }, 'small.png', 'image/png', small);
    const convd: Record<Part, (connection: WireConnection) => Promise<void>> = {
      read: async (c) => expect(await c.request('GET', `/v1/conversions/${photoId}`, auth), 200, 'read'),
      download: async (c) => expect(await c.request('GET', `/v1/conversions/${photoId}/download`, auth), 200, 'download'),
      upload: async (c) => expect(await c.request('POST', '/v1/conversions', { ...auth, 'content-type': refusedBody.contentType }, refusedBody.body), refused.status, 'upload'),
      conversion: async (c) => {
        const created = await c.request('POST', '/v1/conversions', { ...auth, 'content-type': smallBody.contentType }, smallBody.body);
        expect(created, 200, 'conversion');
        const { id, status } = json<{ id: string; status: string }>(created);
        if (status !== 'succeeded') throw new Error(`conversion: ${status}`);
        const result = await c.request('GET', `/v1/conversions/${id}/download`, auth);
        expect(result, 200, 'conversion download');
        if (result.body.subarray(8, 12).toString('latin1') !== 'WEBP') throw new Error('conversion: the download is not a WebP');
      },
    };
    // The bare side of each part: the same requests to servers that answer the same bytes.
    const bareParts: Record<Part, { pids: number[]; run: (lane: number) => Promise<void> }> = {
      read: { pids: [bareRead.pid], run: async (lane) => void (await wires.get(bareRead)![lane]!.request('GET', `/v1/conversions/${photoId}`, auth)) },
      download: { pids: [bareDownload.pid], run: async (lane) => void (await wires.get(bareDownload)![lane]!.request('GET', `/v1/conversions/${photoId}/download`, auth)) },
      upload: { pids: [bareRefusal.pid], run: async (lane) => void (await wires.get(bareRefusal)![lane]!.request('POST', '/v1/conversions', { ...auth, 'content-type': refusedBody.contentType }, refusedBody.body)) },
      conversion: {
        pids: [bareRead.pid, bareSmallResult.pid],
        run: async (lane) => {
          await wires.get(bareRead)![lane]!.request('POST', '/v1/conversions', { ...auth, 'content-type': smallBody.contentType }, smallBody.body);
          await wires.get(bareSmallResult)![lane]!.request('GET', '/v1/conversions/x/download', auth);
        },
      },
    };

    const parts = Object.keys(COUNTS) as Part[];
    const best: Record<Part, { convd: number; bare: number }> = Object.fromEntries(parts.map((part) => [part, { convd: Infinity, bare: Infinity }])) as Record<Part, { convd: number; bare: number }>;
    for (let round = 0; round < ROUNDS; round++) {
      for (const part of parts) {
        const count = COUNTS[part];
        const warm = round === 0 ? count : count / 2;
        await drive(connections, warm, (c) => convd[part](c));
        best[part].convd = Math.min(best[part].convd, await cpuPer([d.pid], count, () => drive(connections, count, (c) => convd[part](c))));
        const lanes = Array.from({ length: CONNECTIONS }, (_, lane) => lane);
        const bareRound = async (n: number) => {
          let next = 0;
          await Promise.all(lanes.map(async (lane) => {
            while (next++ < n) await bareParts[part].run(lane);
          }));
        };
        await bareRound(warm);
        best[part].bare = Math.min(best[part].bare, await cpuPer(bareParts[part].pids, count, () => bareRound(count)));
      }
    }

    // sharp on the same 64x64 PNG in this process, one at a time as each lane of the daemon's
    // conversions is: its CPU per image is what the engine itself costs.
    const sharpCpu = async (count: number) => {
      const before = process.cpuUsage();
      for (let index = 0; index < count; index++) await sharp(small).webp().toBuffer();
      const used = process.cpuUsage(before);
      return (used.user + used.system) / 1000 / count;
    };
    await sharpCpu(200);
    const engineMs = Math.min(await sharpCpu(500), await sharpCpu(500));

    const own = best.conversion.convd - engineMs;
    const baseline = best.conversion.bare + engineMs;
    const ms = (value: number) => `${value.toFixed(2)} ms`;
    const line = (part: Part, what: string) => `${what}: convd ${ms(best[part].convd)} vs node:http ${ms(best[part].bare)} (+${ms(best[part].convd - best[part].bare)})`;
    return {
      title: 'the service\'s own CPU per request and per small conversion',
      figures: `64x64 PNG -> WebP submitted with wait and downloaded: convd ${ms(best.conversion.convd)} of CPU vs node:http's two answers + sharp ${ms(baseline)}; the service's own ${ms(own)}`,
      ratio: `${(best.conversion.convd / baseline).toFixed(2)}x`,
      target: `own <= ${SERVICE_CPU_TARGET_MS} ms`,
      pass: own <= SERVICE_CPU_TARGET_MS,
      notes: [
        `CPU per request (user + system, from /proc), best of ${ROUNDS} alternating rounds, ${CONNECTIONS} keep-alive connections each waiting for its answer (bench/lib/http-wire.ts)`,
        line('read', 'read (GET /v1/conversions/{id})'),
        line('download', `download (${(photoResult.body.length / 1024).toFixed(0)} KiB WebP)`),
        line('upload', `upload of ${(photo.length / 1024).toFixed(0)} KiB refused once read (answered ${refused.status})`),
        `${line('conversion', 'conversion (submit with wait + download)')}; sharp alone ${ms(engineMs)} per image in this process`,
        `the daemon's data dir: ${await describeFileSystem(dir)}; ${steady.note}`,
      ],
    };
  } finally {
    for (const connection of [...connections, ...bareWires]) connection.close();
    await daemon?.stop();
    for (const bare of bares) await bare.stop();
    await removeDir(dir);
  }
}
