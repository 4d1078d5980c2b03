/**
 * The raster engine (BMP, ICO, PPM, PGM, PBM to and from PNG with ffmpeg): one generated test per
 * pair on fixtures ffmpeg writes from a sharp-made PNG, each output decoded; the biggest image of
 * an icon chosen; icons at most 256 pixels a side and the `size` option; the pixel limit read from
 * the header; damaged and lying files failing input_invalid; HEVC HEIC photos through libheif's decoder where the system has it.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import sharp from 'sharp';
import { findHeifDecoder } from '../../src/engines/image/heif-hevc.ts';
import { createImageEngine } from '../../src/engines/image/sharp-engine.ts';
import { createRasterEngine } from '../../src/engines/raster/raster-engine.ts';
import type { Engine, EngineJob } from '../../src/engines/types.ts';
import type { ConversionOptions } from '../../src/model/conversion.ts';
import { assertAnyImage, assertOutput, IMAGE_HEIGHT, IMAGE_WIDTH, makeFixture, mediaTools, type Fixture } from '../helpers/registry-pairs-fixtures.ts';
import { rejectsWith } from '../helpers/failure.ts';

const engine = createRasterEngine();
const status = await engine.probe();
const pairs = engine.pairs();
const tools = await mediaTools();

let dir: string;
let counter = 0;
const fixtures = new Map<string, Promise<Fixture>>();

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'convd-raster-'));
});
after(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

function fixture(source: string): Promise<Fixture> {
  let found = fixtures.get(source);
  if (!found) fixtures.set(source, (found = makeFixture(dir, source, tools)));
  return found;
}

function job(source: string, target: string, inputPath: string, options: ConversionOptions = {}, extra: Partial<EngineJob> = {}): EngineJob {
  return {
    inputPath, outputPath: join(dir, `out-${++counter}.${target}`), source, target, variant: null, options,
    signal: new AbortController().signal, onProgress: () => undefined, ...extra,
  };
}

async function write(name: string, data: Buffer): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, data);
  return path;
}

/** An icon of several PNG images, written by hand (ffmpeg's muxer writes one). */
function icon(images: { width: number; height: number; png: Buffer }[]): Buffer {
  const head = Buffer.alloc(6);
  head.writeUInt16LE(1, 2);
  head.writeUInt16LE(images.length, 4);
  let offset = 6 + 16 * images.length;
  const entries = images.map(({ width, height, png }) => {
    const entry = Buffer.alloc(16);
    entry[0] = width % 256; // 0 means 256
    entry[1] = height % 256;
    entry.writeUInt16LE(1, 4);
    entry.writeUInt16LE(32, 6);
    entry.writeUInt32LE(png.length, 8);
    entry.writeUInt32LE(offset, 12);
    offset += png.length;
    return entry;
  });
  return Buffer.concat([head, ...entries, ...images.map((image) => image.png)]);
}

const solidPng = (width: number, height: number, colour: string) =>
  sharp({ create: { width, height, channels: 4, background: colour } }).png().toBuffer();

describe('raster engine', () => {
  it('offers bmp, ico, ppm, pgm, pbm -> png (a step the registry may chain through) and png -> each', () => {
    assert.ok(status.available, status.detail);
    const formats = ['bmp', 'ico', 'ppm', 'pgm', 'pbm'];
    assert.deepEqual(pairs.filter((p) => p.target === 'png').map((p) => p.source).sort(), [...formats].sort());
    assert.deepEqual(pairs.filter((p) => p.source === 'png').map((p) => p.target).sort(), [...formats].sort());
    for (const pair of pairs) {
      assert.equal(pair.kind, 'image');
      assert.equal(pair.intermediate === true, pair.target === 'png', `${pair.source} -> ${pair.target}`);
    }
  });
});

describe('every raster pair converts, each output decoded', { concurrency: 2 }, () => {
  for (const pair of pairs) {
    it(`${pair.source} -> ${pair.target}`, async () => {
      const input = await fixture(pair.source);
      assert.ok(input.width, `no fixture for ${pair.source}: add one`);
      const progress: number[] = [];
      const made = job(pair.source, pair.target, input.path, {}, { onProgress: (p) => progress.push(p) });
      await engine.convert(made);
      await assertOutput(pair, made.outputPath, input, tools);
      assert.equal(progress.at(-1), 100);
    });
  }
});

describe('what the formats hold', () => {
  it('an icon of several sizes gives its biggest image', async () => {
    const input = await write('sizes.ico', icon([
      { width: 16, height: 16, png: await solidPng(16, 16, '#ff0000') },
      { width: 128, height: 96, png: await solidPng(128, 96, '#0000ff') },
      { width: 32, height: 32, png: await solidPng(32, 32, '#00ff00') },
    ]));
    const made = job('ico', 'png', input);
    await engine.convert(made);
    const { channels } = await sharp(made.outputPath).stats();
    assert.deepEqual((await sharp(made.outputPath).metadata()).width, 128);
    assert.deepEqual(channels.slice(0, 3).map((c) => Math.round(c.mean)), [0, 0, 255], 'the blue one');
  });

  it('an icon is at most 256 pixels a side, or the `size` asked for, in proportion; alpha kept', async () => {
    const big = await write('big.png', await sharp({ create: { width: 600, height: 300, channels: 4, background: { r: 10, g: 20, b: 30, alpha: 0.5 } } }).png().toBuffer());
    const made = job('png', 'ico', big);
    await engine.convert(made);
    await assertAnyImage(tools, made.outputPath, 'ico', 256, 128);
    const sized = job('png', 'ico', big, { size: 32 });
    await engine.convert(sized);
    await assertAnyImage(tools, sized.outputPath, 'ico', 32, 16);
    const back = job('ico', 'png', sized.outputPath);
    await engine.convert(back);
    const meta = await sharp(back.outputPath).metadata();
    assert.equal(meta.hasAlpha, true, 'transparency survives');
  });

  it('the PNG states no resolution (ffmpeg\'s 1:1 aspect ratio would read as 25,400 dpi and shrink a PDF page to a speck)', async () => {
    for (const source of ['ico', 'bmp']) {
      const made = job(source, 'png', (await fixture(source)).path);
      await engine.convert(made);
      assert.equal((await sharp(made.outputPath).metadata()).density, undefined, source);
    }
  });

  it('pbm is black and white; pgm grey', async () => {
    const input = (await fixture('png')).path;
    for (const [target, channels] of [['pbm', 1], ['pgm', 1]] as const) {
      const made = job('png', target, input);
      await engine.convert(made);
      const back = job(target, 'png', made.outputPath);
      await engine.convert(back);
      assert.equal((await sharp(back.outputPath).metadata()).channels, channels, `${target}: one channel`);
      const data = await sharp(back.outputPath).extractChannel(0).raw().toBuffer();
      const levels = new Set(data);
      if (target === 'pbm') assert.ok([...levels].every((level) => level === 0 || level === 255), `pbm: black or white only, not ${[...levels].join(', ')}`);
      else assert.ok([...levels].some((level) => level !== 0 && level !== 255), 'pgm: shades of grey');
    }
  });
});

describe('hostile and broken input', () => {
  it('a BMP whose header states more pixels than the limit fails input_invalid with its size, before decoding', async () => {
    // 12,000 x 12,000 (144 Mpx) declared, 8-bit RLE, a few bytes of data.
    const header = Buffer.alloc(54);
    header.write('BM', 0, 'latin1');
    header.writeUInt32LE(54 + 1024 + 4, 2);
    header.writeUInt32LE(54 + 1024, 10);
    header.writeUInt32LE(40, 14);
    header.writeInt32LE(12_000, 18);
    header.writeInt32LE(12_000, 22);
    header.writeUInt16LE(1, 26);
    header.writeUInt16LE(8, 28);
    header.writeUInt32LE(1, 30); // BI_RLE8
    header.writeUInt32LE(256, 46);
    const bomb = await write('bomb.bmp', Buffer.concat([header, Buffer.alloc(1024), Buffer.from([0, 1, 0, 1])]));
    const limited = createRasterEngine({ maxInputPixels: 100_000_000 });
    await limited.probe();
    const began = Date.now();
    const failure = await rejectsWith(limited.convert(job('bmp', 'png', bomb)), 'input_invalid');
    assert.match(failure.message, /12,000 x 12,000 pixels .*at most 100,000,000 pixels/);
    assert.deepEqual(failure.details, { width: 12_000, height: 12_000, pixels: 144_000_000, limit: 100_000_000 });
    assert.ok(Date.now() - began < 5000, 'read from the header');
  });

  it('random bytes, a truncated file and a PNG named .bmp fail input_invalid without the server\'s paths', async () => {
    const bmp = await readFile((await fixture('bmp')).path);
    const inputs = {
      'random.bmp': Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 7919) % 256)),
      'truncated.ico': (await readFile((await fixture('ico')).path)).subarray(0, 30),
      'really-png.bmp': await readFile((await fixture('png')).path),
      'cut.bmp': bmp.subarray(0, 200),
    };
    for (const [name, data] of Object.entries(inputs)) {
      const source = name.split('.').at(-1)!;
      const path = await write(name, data);
      const failure = await rejectsWith(engine.convert(job(source, 'png', path)), 'input_invalid');
      assert.ok(!failure.message.includes(dir), `${name}: ${failure.message}`);
      assert.doesNotMatch(failure.message, /0x[0-9a-f]{6,}/, 'no decoder addresses');
    }
  });
});

/** HEVC HEIC needs libheif's tools: CI installs them (libheif-examples); elsewhere the test says what is missing. */
const heifEncoder = (() => {
  try {
    execFileSync('heif-enc', ['--help'], { stdio: 'ignore' });
    return 'heif-enc';
  } catch (error) {
    // heif-enc --help exits 1 on some versions but exists.
    return (error as NodeJS.ErrnoException).code === 'ENOENT' ? null : 'heif-enc';
  }
})();
const hevcReady = heifEncoder !== null && (await findHeifDecoder()) !== undefined;

describe('HEVC HEIC (an iPhone photo) through libheif\'s decoder', { skip: !hevcReady && process.env.CI !== 'true' ? 'libheif-examples is not installed' : false }, () => {
  it('converts to jpg, webp and png with the image engine\'s options; the pixel limit applies from the header', async () => {
    const png = await write('photo.png', await sharp({ create: { width: IMAGE_WIDTH * 4, height: IMAGE_HEIGHT * 4, channels: 3, background: '#3366cc' } }).png().toBuffer());
    const heic = join(dir, 'photo.heic');
    execFileSync('heif-enc', ['-q', '60', '-o', heic, png], { stdio: 'ignore' });
    assert.equal((await sharp(heic).metadata()).compression, 'hevc', 'the fixture is HEVC');
    const image: Engine = createImageEngine({ maxInputPixels: 100_000_000, processMemoryMb: 512 });
    assert.match((await image.probe()).detail ?? '', /HEVC HEIC photos decoded by/);
    for (const target of ['jpg', 'webp', 'png']) {
      const made = job('heif', target, heic, { width: IMAGE_WIDTH, fit: 'inside', strip: true, ...(target === 'png' ? {} : { quality: 80 }) });
      await image.convert(made);
      await assertAnyImage(tools, made.outputPath, target, IMAGE_WIDTH, IMAGE_HEIGHT);
      const { channels } = await sharp(made.outputPath).stats();
      assert.deepEqual(channels.slice(0, 3).map((c) => Math.round(c.mean / 16)), [3, 6, 13], `${target}: the photo's colour (#3366cc)`);
    }
    const limited = createImageEngine({ maxInputPixels: 1000 });
    const failure = await rejectsWith(limited.convert(job('heif', 'png', heic)), 'input_invalid');
    assert.match(failure.message, /384 x 256 pixels/);
  });
});
