/**
 * Work that runs to its time limit (or near it) on every engine kind, whatever the engine does:
 * the load of the fair-share test and bench. Made fresh (a 2-minute video, a noise image)
 * under `dir`.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import sharp from 'sharp';
import { findBinary } from '../../src/engines/media/binaries.ts';
import { runProcess } from '../../src/engines/subprocess.ts';
import { docxOf } from './hostile-files.ts';
import { HOSTILE_POSTSCRIPT } from './postscript.ts';

export const W = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"';

export interface Hostile {
  upload: { data: Buffer; name: string };
  target: string;
}

/** One kind of work per engine that runs to its limit (or near it) whatever the engine does. */
export async function hostileWork(dir: string): Promise<Hostile[]> {
  const ffmpeg = (await findBinary('ffmpeg'))?.path;
  assert.ok(ffmpeg, 'ffmpeg is needed for the media engine');
  const video = join(dir, 'long.mp4');
  const made = await runProcess(ffmpeg, ['-v', 'error', '-nostdin', '-y', '-f', 'lavfi', '-i', 'testsrc2=size=640x360:rate=25', '-t', '120', '-c:v', 'libx264', '-preset', 'ultrafast', video]);
  assert.equal(made.code, 0, made.stderrTail);
  const noise = await sharp({ create: { width: 3000, height: 3000, channels: 3, background: '#000', noise: { type: 'gaussian', mean: 128, sigma: 60 } } }).png({ compressionLevel: 1 }).toBuffer();
  const pageBreaks = `<w:document ${W}><w:body>${'<w:p><w:r><w:t>x</w:t><w:br w:type="page"/></w:r></w:p>'.repeat(60_000)}</w:body></w:document>`;
  const yaml = Array.from({ length: 60_000 }, (_, i) => `- {id: ${i}, name: n${i}, tags: [a, b, c], v: {x: 1, y: [2, 3]}}\n`).join('');
  const markdown = Array.from({ length: 40_000 }, (_, i) => `Paragraph ${i} with *emphasis*, **strong**, \`code\` and a [link](https://example.invalid/${i}).\n\n`).join('');
  return [
    { upload: { data: Buffer.from(HOSTILE_POSTSCRIPT.loops), name: 'loop.ps' }, target: 'pdf' },
    { upload: { data: Buffer.from('<html><body><p>busy</p><script>for (;;) {}</script></body></html>'), name: 'busy.html' }, target: 'pdf' },
    { upload: { data: docxOf(pageBreaks), name: 'breaks.docx' }, target: 'pdf' },
    { upload: { data: await readFile(video), name: 'long.mp4' }, target: 'webm' },
    { upload: { data: noise, name: 'noise.png' }, target: 'avif' },
    { upload: { data: Buffer.from(yaml), name: 'records.yaml' }, target: 'json' },
    { upload: { data: Buffer.from(markdown), name: 'long.md' }, target: 'docx' },
  ];
}

