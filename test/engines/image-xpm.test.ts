/**
 * XPM (X PixMap), which libvips does not read, through the image engine's own decoder: every way
 * of writing a colour (hex of 1 to 4 digits a channel, X11 names with spaces, None), two
 * characters a pixel, transparency kept in png and put on white in jpg; the pixel limit read
 * from the header before anything is decoded; broken files failing input_invalid in words; the
 * XPMs Debian ships (/usr/share/pixmaps) converted as a user would.
 */
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import sharp from 'sharp';
import { createImageEngine } from '../../src/engines/image/sharp-engine.ts';
import type { EngineJob } from '../../src/engines/types.ts';
import { xpmText } from '../helpers/xpm.ts';
import { rejectsWith } from '../helpers/failure.ts';

const engine = createImageEngine({ maxInputPixels: 1_000_000 });
await engine.probe();
let dir: string;
let counter = 0;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'convd-xpm-'));
});
after(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function convert(text: string | Buffer, target: string, options: EngineJob['options'] = {}): Promise<{ data: Buffer; width: number; height: number; channels: number }> {
  const inputPath = join(dir, `in-${++counter}.xpm`);
  await writeFile(inputPath, text);
  const job: EngineJob = {
    inputPath, outputPath: join(dir, `out-${counter}.${target}`), source: 'xpm', target, variant: null,
    options: target === 'jpg' ? { background: '#ffffff', ...options } : options,
    signal: new AbortController().signal, onProgress: () => undefined,
  };
  await engine.convert(job);
  const { data, info } = await sharp(job.outputPath).raw().toBuffer({ resolveWithObject: true });
  return { data, width: info.width, height: info.height, channels: info.channels };
}

function pixel(image: { data: Buffer; width: number; channels: number }, x: number, y: number): number[] {
  const at = (y * image.width + x) * image.channels;
  return [...image.data.subarray(at, at + image.channels)];
}

describe('xpm', () => {
  it('is offered to every image target', () => {
    const targets = engine.pairs().filter((p) => p.source === 'xpm').map((p) => p.target).sort();
    assert.deepEqual(targets, ['avif', 'gif', 'jpg', 'png', 'tiff', 'webp']);
  });

  it('every way of writing a colour, two characters a pixel, None transparent', async () => {
    const colours: Record<string, string> = {
      'aa': 'c #f00', 'ab': 'c #00ff00', 'ac': 'c #00000000ffff', 'ad': 'c light sky blue', 'ae': 's bg c None', 'af': 'm black c Gray50',
    };
    const codes = Object.keys(colours);
    const image = await convert(xpmText(6, 2, colours, (x) => codes[x]!), 'png');
    assert.deepEqual([image.width, image.height, image.channels], [6, 2, 4]);
    assert.deepEqual(pixel(image, 0, 0), [255, 0, 0, 255]);
    assert.deepEqual(pixel(image, 1, 1), [0, 255, 0, 255]);
    assert.deepEqual(pixel(image, 2, 0), [0, 0, 255, 255]);
    assert.deepEqual(pixel(image, 3, 0), [0x87, 0xce, 0xfa, 255], 'X11 "light sky blue"');
    assert.equal(pixel(image, 4, 0)[3], 0, 'None is transparent');
    assert.deepEqual(pixel(image, 5, 0), [0x7f, 0x7f, 0x7f, 255], 'c is preferred to m');
  });

  it('to jpg: the transparent part on white', async () => {
    const image = await convert(xpmText(32, 32, { '#': 'c black', ' ': 'c None' }, (x) => (x >= 16 ? '#' : ' ')), 'jpg');
    assert.ok(pixel(image, 4, 16).every((v) => v >= 245), `white: ${pixel(image, 4, 16).join(',')}`);
    assert.ok(pixel(image, 28, 16).every((v) => v <= 10), `black: ${pixel(image, 28, 16).join(',')}`);
  });

  it('a header stating more pixels than the limit fails before decoding, with the size', async () => {
    const bomb = '/* XPM */\nstatic char *x[] = {\n"5000 5000 1 1",\n". c #000000",\n".."\n};\n';
    const failure = await rejectsWith(convert(bomb, 'png'), 'input_invalid');
    assert.match(failure.message, /5,000 x 5,000 pixels/);
  });

  it('broken files fail input_invalid, saying what is wrong', async () => {
    const cases: [string, RegExp][] = [
      ['not an xpm at all', /does not start with the \/\* XPM \*\/ comment/],
      ['/* XPM */\nstatic char *x[] = {\n"2 2 1 1",\n". c #000000",\n"..",\n"."\n};\n', /row 2 holds 1 pixels, the header says 2/],
      ['/* XPM */\nstatic char *x[] = {\n"2 1 1 1",\n". c bluish",\n".."\n};\n', /a colour this server does not know: "bluish"/],
      ['/* XPM */\nstatic char *x[] = {\n"2 1 1 1",\n". c #000000",\n".x"\n};\n', /pixel 2 of row 1 has a colour the file does not define/],
      ['/* XPM */\nstatic char *x[] = {\n"2 1 1 1",\n". c #000000",\n"..\n', /a string is not closed/],
      ['/* XPM */\nstatic char *x[] = {\n"two 1 1 1"\n};\n', /its header gives no width/],
    ];
    for (const [text, message] of cases) {
      assert.match((await rejectsWith(convert(text, 'png'), 'input_invalid')).message, message);
    }
  });

  const shipped = (() => {
    try {
      return readdirSync('/usr/share/pixmaps').filter((name) => name.endsWith('.xpm')).slice(0, 8);
    } catch {
      return [];
    }
  })();
  it('the XPMs Debian ships convert to png and jpg', { skip: shipped.length === 0 ? 'no /usr/share/pixmaps/*.xpm here' : false }, async () => {
    for (const name of shipped) {
      const text = await readFile(join('/usr/share/pixmaps', name));
      const header = /"\s*(\d+)\s+(\d+)\s/.exec(text.toString('latin1'));
      assert.ok(header, name);
      for (const target of ['png', 'jpg']) {
        const image = await convert(text, target);
        assert.deepEqual([image.width, image.height], [Number(header[1]), Number(header[2])], `${name} -> ${target}`);
      }
    }
  });
});
