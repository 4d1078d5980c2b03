/**
 * `convd doctor`'s font lines: which scripts the system's fonts draw, what Word's fonts become,
 * colour emoji and hyphenation, each missing piece with the package that brings it. On a box set
 * up as the README says (CI) everything is there; with fontconfig shown only DejaVu, as a box
 * without those packages is, the lines name what is missing.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { fontLines } from '../../daemon/doctor.ts';
import { systemFonts } from '../../src/engines/fonts/system-fonts.ts';
import { ROOT } from '../helpers/daemon.ts';

const run = promisify(execFile);
const required = process.env.CI === 'true';
const fonts = await systemFonts();
const skip = fonts.fonts > 0 || required ? false : 'fontconfig is not installed';

let dir: string;

describe('convd doctor: fonts', { skip }, () => {
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'convd-fontconfig-'));
  });

  after(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('on a box set up as the README says: every script drawn, Word\'s fonts metric-compatible, emoji in colour, hyphenation for the common languages', { skip: required || fonts.missing.length === 0 ? false : 'the fonts of the README\'s line are not installed here' }, () => {
    const lines = fontLines(fonts).join('\n');
    assert.deepEqual(fonts.missing, [], lines);
    for (const script of ['Latin', 'Arabic', 'Hebrew', 'Devanagari', 'Thai', 'Chinese', 'Japanese', 'Korean']) assert.ok(fonts.covered.includes(script), script);
    assert.deepEqual(fonts.standIns.map((entry) => [entry.font, entry.used]), [
      ['Calibri', 'Carlito'], ['Cambria', 'Caladea'], ['Arial', 'Liberation Sans'], ['Times New Roman', 'Liberation Serif'], ['Courier New', 'Liberation Mono'],
    ]);
    assert.ok(fonts.colourEmoji, lines);
    for (const language of ['en', 'de', 'fr', 'es']) assert.ok(fonts.hyphenation.includes(language), `hyphenation for ${language}: ${lines}`);
    assert.match(lines, /^fonts: \d+ fonts; every script checked is drawn: Latin, /m);
    assert.match(lines, /^Word's fonts: Calibri -> Carlito, Cambria -> Caladea, .* \(metric-compatible: lines and pages break as in Word\)$/m);
    assert.ok(fonts.outlineEmoji, lines);
    assert.match(lines, /^emoji: in colour \(Chromium\); as outlines \(LibreOffice\)$/m);
  });

  it('with only DejaVu: the scripts not drawn, Word\'s fonts not metric-compatible and no colour emoji, each with the package to install', async () => {
    const config = join(dir, 'fonts.conf');
    await writeFile(config, `<?xml version="1.0"?><!DOCTYPE fontconfig SYSTEM "urn:fontconfig:fonts.dtd"><fontconfig><dir>/usr/share/fonts/truetype/dejavu</dir><cachedir>${join(dir, 'cache')}</cachedir></fontconfig>`);
    const script = "const { fontLines } = await import('./daemon/doctor.ts'); const { systemFonts } = await import('./src/engines/fonts/system-fonts.ts'); console.log(fontLines(await systemFonts()).join('\\n'));";
    const { stdout } = await run(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: ROOT, env: { ...process.env, FONTCONFIG_FILE: config } });
    assert.match(stdout, /^fonts: \d+ fonts; drawn: Latin, Greek, Cyrillic.*; NOT DRAWN \(empty boxes or refused\): .*Chinese, Japanese, Korean: install .*fonts-noto-cjk/m);
    assert.match(stdout, /^Word's fonts: Calibri -> (?!Carlito).*NOT METRIC-COMPATIBLE: Calibri, Cambria, Arial, Times New Roman, Courier New: .*install fonts-crosextra-carlito fonts-crosextra-caladea fonts-liberation2$/m);
    assert.match(stdout, /^emoji: NO COLOUR FONT: .*install fonts-noto-color-emoji; as outlines \(LibreOffice\)$/m);
  });
});
