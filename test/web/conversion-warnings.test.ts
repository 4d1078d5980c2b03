/**
 * The conversions page says what a result's warnings say (a font set in another, a file left out), in the page's
 * language, with the names escaped like every other value a document brings.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { conversionsPage } from '../../daemon/web/conversion-pages.ts';
import { translator } from '../../daemon/web/text.ts';
import type { PublicConversion } from '../../src/model/conversion.ts';

function conversion(warnings: PublicConversion['warnings']): PublicConversion {
  const self = 'https://convd.example/v1/conversions/cnv_1';
  return {
    id: 'cnv_1', object: 'conversion', status: 'succeeded', source: 'docx', target: 'pdf', variant: 'pdf', options: {},
    original_name: 'report.docx', input_size: 1000, progress: 100, credits: 2,
    created_at: '2026-11-27T10:00:00.000Z', started_at: '2026-11-27T10:00:01.000Z', finished_at: '2026-11-27T10:00:02.000Z',
    result: { filename: 'report.pdf', size: 2000, mime: 'application/pdf', expires_at: '2026-11-28T10:00:02.000Z', download_url: `${self}/download` },
    warnings, error: null, links: { self, download: `${self}/download` },
  };
}

const page = (language: 'en' | 'de', warnings: PublicConversion['warnings']) => conversionsPage(
  { language, t: translator(language), path: '/conversions', base: '', session: { csrf: 'token', accountName: 'ann', admin: false } },
  { conversions: [conversion(warnings)], status: null, nextCursor: null, older: false },
);

describe('conversions page: warnings', () => {
  it('names the font and what it was set in, in English and German, escaped', () => {
    const warnings = [{ code: 'font_substituted' as const, font: 'Segoe <b>UI</b>', used: 'DejaVu Sans', message: 'The document names the font …' }];
    const english = page('en', warnings);
    assert.match(english, /The font “Segoe &lt;b&gt;UI&lt;\/b&gt;” is not installed: set in “DejaVu Sans”; lines and pages may break elsewhere\./);
    assert.doesNotMatch(english, /<b>UI<\/b>/);
    assert.match(page('de', warnings), /Die Schrift „Segoe &lt;b&gt;UI&lt;\/b&gt;“ ist nicht installiert: gesetzt in „DejaVu Sans“/);
  });

  it('names a file the document includes or an image it shows that was left out, in English and German, escaped', () => {
    const warnings = [{ code: 'content_left_out' as const, reference: 'chapter<script>.tex', message: 'The document includes …' }];
    assert.match(page('en', warnings), /The document includes or shows “chapter&lt;script&gt;\.tex”, which is not read here: that part is left out\./);
    assert.doesNotMatch(page('en', warnings), /<script>/);
    assert.match(page('de', warnings), /Das Dokument bindet „chapter&lt;script&gt;\.tex“ ein, das hier nicht gelesen wird: dieser Teil fehlt\./);
  });

  it('says nothing where there is nothing to say', () => {
    assert.doesNotMatch(page('en', []), /is not installed/);
  });
});
