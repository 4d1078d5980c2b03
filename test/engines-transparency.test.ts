/**
 * Transparent images to targets without transparency: black artwork on a
 * transparent ground, converted to jpg (sharp), bmp, ppm, pgm, pbm (ffmpeg) and through a chain
 * (svg -> png -> bmp), each output decoded by hand or by libvips: the ground is white, or the
 * `background` asked for, and the artwork still black. The option (one of CSS's sixteen basic
 * colour names) is listed for those pairs and anything else is refused in words.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import sharp from 'sharp';
import { createImageEngine } from '../src/engines/image/sharp-engine.ts';
import { createRasterEngine } from '../src/engines/raster/raster-engine.ts';
import type { EngineJob } from '../src/engines/types.ts';
import { renderFieldMessage } from '../src/errors/messages.ts';
import { validateOptions } from '../src/formats/options.ts';
import { FormatRegistry } from '../src/formats/registry.ts';
import type { ConversionPair } from '../src/engines/pairs.ts';

const WIDTH = 64;
const HEIGHT = 48;
/**
 * The artwork: an opaque black square; everything else is transparent (RGBA 0,0,0,0). The ground
 * is looked at in JPEG's 16-pixel blocks that hold no artwork (their colour is not smeared).
 */
const ART = { left: 24, top: 16, size: 16 };

let registry: FormatRegistry;
let dir: string;
let png: string;
let svg: string;
let counter = 0;

before(async () => {
  registry = await FormatRegistry.create([createImageEngine({ maxInputPixels: 10_000_000 }), createRasterEngine()]);
  dir = await mkdtemp(join(tmpdir(), 'convd-transparency-'));
  png = join(dir, 'icon.png');
  const square = await sharp({ create: { width: ART.size, height: ART.size, channels: 4, background: { r: 0, g: 0, b: 0, alpha: 1 } } }).png().toBuffer();
  await sharp({ create: { width: WIDTH, height: HEIGHT, channels: 4, background: { r: 0, g: 0, b: 0, alpha: 0 } } })
    .composite([{ input: square, left: ART.left, top: ART.top }]).png().toFile(png);
  svg = join(dir, 'icon.svg');
  await writeFile(svg, `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${HEIGHT}"><rect x="${ART.left}" y="${ART.top}" width="${ART.size}" height="${ART.size}" fill="#000"/></svg>`);
});

after(async () => {
  await registry?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

function pairOf(source: string, target: string): ConversionPair {
  const pair = registry.pair(source, target);
  assert.ok(pair, `${source} -> ${target} is offered`);
  return pair;
}

async function convert(input: string, source: string, target: string, raw: Record<string, unknown> = {}): Promise<Buffer> {
  const pair = pairOf(source, target);
  const outcome = validateOptions(pair, raw);
  assert.ok(outcome.ok, JSON.stringify(!outcome.ok && outcome.problems));
  const job: EngineJob = {
    inputPath: input, outputPath: join(dir, `out-${++counter}.${target}`), source, target, variant: null,
    options: outcome.options, signal: new AbortController().signal, onProgress: () => undefined,
  };
  await registry.engine(pair.engine)!.convert(job);
  return readFile(job.outputPath);
}

/** Pixels as RGB triples, row by row from the top. */
interface Decoded {
  width: number;
  height: number;
  rgb(x: number, y: number): [number, number, number];
}

/** A binary Netpbm file (P4 bitmap, P5 greymap, P6 pixmap), read by hand. */
function decodeNetpbm(bytes: Buffer): Decoded {
  const header = /^P([456])\s+(?:#[^\n]*\n\s*)*(\d+)\s+(\d+)\s+(?:(\d+)\s)?/.exec(bytes.toString('latin1', 0, 64));
  assert.ok(header, 'a binary Netpbm header');
  const [kind, width, height] = [header[1], Number(header[2]), Number(header[3])];
  const data = bytes.subarray(header[0].length);
  if (kind === '4') {
    const stride = Math.ceil(width / 8);
    return { width, height, rgb: (x, y) => ((data[y * stride + (x >> 3)]! >> (7 - (x & 7))) & 1 ? [0, 0, 0] : [255, 255, 255]) };
  }
  if (kind === '5') return { width, height, rgb: (x, y) => { const v = data[y * width + x]!; return [v, v, v]; } };
  return { width, height, rgb: (x, y) => { const i = (y * width + x) * 3; return [data[i]!, data[i + 1]!, data[i + 2]!]; } };
}

/** A 24-bit BMP, read by hand (rows bottom-up unless the height is negative, BGR, padded to 4 bytes). */
function decodeBmp(bytes: Buffer): Decoded {
  assert.equal(bytes.toString('latin1', 0, 2), 'BM');
  const offset = bytes.readUInt32LE(10);
  const width = bytes.readInt32LE(18);
  const stated = bytes.readInt32LE(22);
  assert.equal(bytes.readUInt16LE(28), 24, 'a 24-bit BMP: no alpha channel for a reader to ignore');
  const height = Math.abs(stated);
  const stride = Math.ceil((width * 3) / 4) * 4;
  return {
    width, height, rgb: (x, y) => {
      const row = stated > 0 ? height - 1 - y : y;
      const i = offset + row * stride + x * 3;
      return [bytes[i + 2]!, bytes[i + 1]!, bytes[i]!];
    },
  };
}

async function decodeWithSharp(bytes: Buffer): Promise<Decoded> {
  const { data, info } = await sharp(bytes).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  return { width: info.width, height: info.height, rgb: (x, y) => { const i = (y * info.width + x) * 3; return [data[i]!, data[i + 1]!, data[i + 2]!]; } };
}

/** The former transparent ground is `ground` (within `tolerance`: JPEG is lossy); the artwork black. */
function assertFlattened(image: Decoded, ground: [number, number, number], tolerance = 0): void {
  assert.deepEqual([image.width, image.height], [WIDTH, HEIGHT]);
  const near = (actual: [number, number, number], expected: [number, number, number], what: string) =>
    assert.ok(actual.every((value, i) => Math.abs(value - expected[i]!) <= tolerance), `${what}: ${actual.join(',')} (expected ${expected.join(',')})`);
  for (const [x, y] of [[2, 2], [WIDTH - 3, HEIGHT - 3], [4, HEIGHT / 2]] as const) near(image.rgb(x, y), ground, `the ground at ${x},${y}`);
  const middle = ART.size / 2;
  near(image.rgb(ART.left + middle, ART.top + middle), [0, 0, 0], 'the artwork');
}

const WHITE: [number, number, number] = [255, 255, 255];

describe('transparent images on targets without transparency', () => {
  it('png -> jpg: a white ground by default, the colour asked for, the artwork black', async () => {
    assertFlattened(await decodeWithSharp(await convert(png, 'png', 'jpg')), WHITE, 6);
    assertFlattened(await decodeWithSharp(await convert(png, 'png', 'jpg', { background: 'navy' })), [0x00, 0x00, 0x80], 8);
  });

  it('png -> bmp and ppm: a white ground by default, exactly the colour asked for', async () => {
    assertFlattened(decodeBmp(await convert(png, 'png', 'bmp')), WHITE);
    assertFlattened(decodeNetpbm(await convert(png, 'png', 'ppm')), WHITE);
    assertFlattened(decodeBmp(await convert(png, 'png', 'bmp', { background: 'teal' })), [0x00, 0x80, 0x80]);
    assertFlattened(decodeNetpbm(await convert(png, 'png', 'ppm', { background: 'olive' })), [0x80, 0x80, 0x00]);
  });

  it('png -> pgm and pbm: white ground, black artwork', async () => {
    assertFlattened(decodeNetpbm(await convert(png, 'png', 'pgm')), WHITE);
    assertFlattened(decodeNetpbm(await convert(png, 'png', 'pbm')), WHITE);
  });

  it('through a chain: svg -> png -> bmp takes the background to its last step', async () => {
    const pair = pairOf('svg', 'bmp');
    assert.ok(pair.steps, 'a chain');
    assertFlattened(decodeBmp(await convert(svg, 'svg', 'bmp')), WHITE);
    assertFlattened(decodeBmp(await convert(svg, 'svg', 'bmp', { background: 'lime' })), [0, 255, 0]);
    assertFlattened(await decodeWithSharp(await convert(svg, 'svg', 'jpg')), WHITE, 6);
  });

  it('the option is listed where the target holds no transparency, and only there', () => {
    for (const [source, target] of [['png', 'jpg'], ['svg', 'jpg'], ['webp', 'jpg'], ['png', 'bmp'], ['png', 'ppm'], ['png', 'pgm'], ['png', 'pbm'], ['svg', 'bmp'], ['gif', 'ppm']]) {
      const option = pairOf(source!, target!).options.find((o) => o.name === 'background');
      assert.ok(option, `${source} -> ${target} lists background`);
      assert.equal(option.default, 'white');
      assert.equal(option.type, 'enum', 'a type the spec\'s option descriptors have');
    }
    for (const [source, target] of [['png', 'webp'], ['png', 'png'], ['jpg', 'png'], ['png', 'ico'], ['png', 'tiff']]) {
      const pair = registry.pair(source!, target!);
      if (pair) assert.ok(!pair.options.some((o) => o.name === 'background'), `${source} -> ${target} keeps its transparency`);
    }
  });

  it('a colour that is not one of the sixteen names is refused, naming the ones there are', () => {
    const pair = pairOf('png', 'jpg');
    for (const value of ['#ffffff', 'White ', 'orange', '']) {
      const outcome = validateOptions(pair, { background: value });
      assert.ok(!outcome.ok, value);
      const problem = outcome.problems['options.background'];
      assert.ok(problem, value);
      assert.match(renderFieldMessage(problem.reason, problem.params, 'en'), /white.*black/, value);
    }
    assert.ok(validateOptions(pair, { background: 'fuchsia' }).ok);
  });
});
