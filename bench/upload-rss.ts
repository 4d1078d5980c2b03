/**
 * upload-rss: Peak RSS of the daemon while it receives a 1 GiB upload, against its idle RSS. The
 * body is produced by a generator (1 MiB at a time, with backpressure), never held whole by the
 * client. The file is named .png but is not one: its conversion fails once uploaded; only the
 * upload matters here. Memory is read from /proc/<pid>/status: VmRSS sampled every 20 ms, and VmHWM
 * (the kernel's own peak) after resetting it at idle.
 */
import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { startBenchDaemon, type BenchDaemon } from './lib/daemon.ts';
import { multipartBody, multipartFrame, send } from './lib/http.ts';
import { tinyPng } from './lib/images.ts';
import { removeDir, tempDir } from './lib/processes.ts';
import type { BenchResult } from './types.ts';

const UPLOAD_BYTES = 1024 ** 3;
const CHUNK = 1024 * 1024;
const LIMIT_MB = 150;

function* body(head: Buffer, tail: Buffer): Generator<Buffer> {
  yield head;
  // Random bytes, made once: what the daemon writes and hashes must not be trivially compressible.
  const block = randomBytes(CHUNK);
  for (let sent = 0; sent < UPLOAD_BYTES; sent += CHUNK) yield block.subarray(0, Math.min(CHUNK, UPLOAD_BYTES - sent));
  yield tail;
}

function upload(daemon: BenchDaemon): Promise<{ status: number; text: string }> {
  const frame = multipartFrame({ target: 'webp' }, 'huge.png', 'image/png');
  const length = frame.head.length + UPLOAD_BYTES + frame.tail.length;
  return new Promise((resolve, reject) => {
    const req = request({
      host: daemon.host, port: daemon.port, method: 'POST', path: '/v1/conversions',
      headers: { authorization: `Bearer ${daemon.apiKey}`, 'content-type': frame.contentType, 'content-length': String(length) },
    }, (res) => {
      let text = '';
      res.on('data', (chunk: Buffer) => (text += chunk.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on('error', reject);
    Readable.from(body(frame.head, frame.tail), { objectMode: false }).pipe(req);
  });
}

async function idleRssKb(daemon: BenchDaemon): Promise<number> {
  let max = 0;
  for (let i = 0; i < 10; i++) {
    max = Math.max(max, (await daemon.memory()).rssKb);
    await sleep(50);
  }
  return max;
}

export async function benchUploadRss(): Promise<BenchResult> {
  const dataDir = await tempDir('upload');
  const notes: string[] = [];
  try {
    const daemon = await startBenchDaemon({ dataDir });
    try {
      // Idle means ready to serve: the first request and conversion have loaded what they load.
      const png = await tinyPng();
      const warm = multipartBody({ target: 'webp', wait: '30' }, 'warm.png', 'image/png', png);
      const warmed = await send(daemon, 'POST', '/v1/conversions', { authorization: `Bearer ${daemon.apiKey}`, 'content-type': warm.contentType }, warm.body);
      if (warmed.status !== 200) throw new Error(`warm-up conversion answered ${warmed.status}`);
      await sleep(500);
      const idleKb = await idleRssKb(daemon);
      const peakReset = await daemon.resetPeak();
      if (!peakReset) notes.push('VmHWM could not be reset: peak is from sampling only');

      let sampledPeakKb = 0;
      let sampling = true;
      const sampler = (async () => {
        while (sampling) {
          sampledPeakKb = Math.max(sampledPeakKb, (await daemon.memory()).rssKb);
          await sleep(20);
        }
      })();
      const started = performance.now();
      const answer = await upload(daemon);
      const seconds = (performance.now() - started) / 1000;
      sampling = false;
      await sampler;
      const { peakKb: hwmKb } = await daemon.memory();
      if (answer.status !== 202 && answer.status !== 200) notes.push(`INVALID: the upload answered ${answer.status}: ${answer.text.slice(0, 200)}`);

      const peakKb = peakReset ? Math.max(hwmKb, sampledPeakKb) : sampledPeakKb;
      const aboveMb = (peakKb - idleKb) / 1024;
      return {
        title: 'RSS during a 1 GiB upload',
        figures: `peak ${(peakKb / 1024).toFixed(0)} MB vs idle ${(idleKb / 1024).toFixed(0)} MB`,
        ratio: `+${aboveMb.toFixed(0)} MB`,
        target: `< ${LIMIT_MB} MB above idle`,
        pass: aboveMb < LIMIT_MB && notes.length === 0,
        notes: [`upload of 1 GiB took ${seconds.toFixed(1)} s (${(1024 / seconds).toFixed(0)} MiB/s); sampled peak ${(sampledPeakKb / 1024).toFixed(0)} MB, VmHWM ${(hwmKb / 1024).toFixed(0)} MB`, ...notes],
      };
    } finally {
      await daemon.stop();
    }
  } finally {
    await removeDir(dataDir);
  }
}
