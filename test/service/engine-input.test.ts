/**
 * Which runs go without a run directory (runsWithoutNames) and which take their input from the
 * record as bytes (runsFromBytes): decided from what the engine declares and what the submission
 * saw of the upload.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ConversionPair } from '../../src/engines/pairs.ts';
import type { Engine } from '../../src/engines/types.ts';
import { runsFromBytes, runsWithoutNames } from '../../src/service/engine-input.ts';

const engine = (declared: Partial<Engine>): Engine => ({
  name: 'declared', probe: async () => ({ name: 'declared', available: true }), pairs: () => [], formats: () => [], convert: async () => ({ size: 0 }), ...declared,
});
const pair = (source: string, more: Partial<ConversionPair> = {}): ConversionPair => ({ source, target: 'png', engine: 'declared', kind: 'document', options: [], variants: [], ...more });

describe('a run without a run directory', () => {
  const libvips = engine({ readsAnyNameOf: ['png', 'jpg'], picksReaderFromBytes: true, readsBytesOf: ['png'] });
  const pdfium = engine({ readsAnyNameOf: ['pdf'] });
  const office = engine({ namesItsInputOf: ['docx'] });

  it('where the library picks its reader from the bytes: only for an upload whose image header was seen', () => {
    assert.equal(runsWithoutNames(libvips, pair('png'), { input_pixels: 64 * 64 }), true);
    assert.equal(runsWithoutNames(libvips, pair('png'), {}), false, 'a URL input, or an SVG sent as .png: no header seen');
    assert.equal(runsWithoutNames(libvips, pair('png'), { input_pixels: null }), false);
    assert.equal(runsFromBytes(libvips, pair('png'), { input_pixels: 64 * 64 }), true);
    assert.equal(runsFromBytes(libvips, pair('jpg'), { input_pixels: 64 * 64 }), false, 'a source whose bytes it does not take');
  });

  it('where the library reads only the format it is given (PDFium): whatever the upload looked like', () => {
    assert.equal(runsWithoutNames(pdfium, pair('pdf'), {}), true);
    assert.equal(runsWithoutNames(pdfium, pair('docx'), {}), false);
    assert.equal(runsFromBytes(pdfium, pair('pdf'), {}), false, 'no bytes without readsBytesOf');
  });

  it('where the engine names the input itself in a directory of its own (LibreOffice)', () => {
    assert.equal(runsWithoutNames(office, pair('docx'), {}), true);
    assert.equal(runsFromBytes(office, pair('docx'), {}), false);
  });

  it('never for a chain, a pair with a fallback, a merge or an input with images beside it', () => {
    for (const [declared, source, facts] of [[libvips, 'png', { input_pixels: 100 }], [pdfium, 'pdf', {}], [office, 'docx', {}]] as const) {
      assert.equal(runsWithoutNames(declared, pair(source, { steps: [pair(source), pair('pdf')] }), facts), false);
      assert.equal(runsWithoutNames(declared, pair(source, { fallback: pair(source) }), facts), false);
      assert.equal(runsWithoutNames(declared, pair(source), { ...facts, inputs: [{ name: 'a', size: 1 }] as never }), false);
      assert.equal(runsWithoutNames(declared, pair(source), { ...facts, mark_images: ['logo'] as never }), false);
    }
  });
});
