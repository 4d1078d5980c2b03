/**
 * Reading pandoc's log for what its sandbox left out (src/engines/markup/left-out.ts): includes and
 * images become content_left_out warnings, each reference once, at most ten; anything else in the
 * log, or a log that is not one, gives none; of a log of many megabytes only its head is read. The
 * engine's own run is tested in markup.test.ts.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { MAX_LEFT_OUT_WARNINGS } from '../../src/engines/left-out.ts';
import { leftOutOf, MAX_LOG_BYTES, readLogHead } from '../../src/engines/markup/left-out.ts';

const include = (path: unknown) => ({ type: 'CouldNotLoadIncludeFile', verbosity: 'WARNING', path, source: 'document.rst', line: 6, column: 1 });
const resource = (path: unknown) => ({ type: 'CouldNotFetchResource', verbosity: 'WARNING', path, message: 'not found' });

describe('what pandoc\'s sandbox left out, from its log', () => {
  it('an include and an image, each named in its message; translations and other warnings are not the document\'s', () => {
    const warnings = leftOutOf(JSON.stringify([
      include('chapter1.tex'),
      { type: 'CouldNotLoadTranslations', verbosity: 'WARNING', message: 'data file translations/en.yaml not found', lang: 'en-US' },
      resource('https://example.com/logo.png'),
      { type: 'NoTranslation', verbosity: 'WARNING', term: 'Abstract' },
    ]));
    assert.deepEqual(warnings.map((warning) => warning.code === 'content_left_out' && warning.reference), ['chapter1.tex', 'https://example.com/logo.png']);
    assert.match(warnings[0]!.message, /^The document includes "chapter1\.tex", which is not read here/);
    assert.match(warnings[1]!.message, /^The document shows "https:\/\/example\.com\/logo\.png", which is not fetched here/);
  });

  it('each reference once, at most ten; a name as long as a paragraph is cut', () => {
    const many = Array.from({ length: 30 }, (_, i) => resource(`figure-${i}.png`));
    assert.equal(leftOutOf(JSON.stringify([...many, ...many])).length, MAX_LEFT_OUT_WARNINGS);
    assert.equal(leftOutOf(JSON.stringify([include('a.rst'), include('a.rst'), resource('a.rst')])).length, 1);
    const [long] = leftOutOf(JSON.stringify([include('x'.repeat(5000))]));
    assert.ok(long!.code === 'content_left_out' && long!.reference.length === 201 && long!.reference.endsWith('…'));
  });

  it('a path the engine itself named (the epub writer\'s font directory) is not the document\'s', () => {
    const warnings = leftOutOf(JSON.stringify([resource('data'), resource('logo.png')]), new Set(['data']));
    assert.deepEqual(warnings.map((warning) => warning.code === 'content_left_out' && warning.reference), ['logo.png']);
  });

  it('a log that is not pandoc\'s gives nothing: not JSON, not a list, entries without a path', () => {
    for (const log of ['', 'not json', '{"type":"CouldNotLoadIncludeFile","path":"a"}', 'null', '[null, 3, "x"]', JSON.stringify([include(''), include(7), resource(null)])]) {
      assert.deepEqual(leftOutOf(log), [], log);
    }
  });

  it('of a log larger than a megabyte, its whole entries within the first are read (as pandoc writes it: indented by four)', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'convd-pandoc-log-'));
    try {
      const log = join(dir, 'pandoc-log.json');
      const entries = Array.from({ length: 20_000 }, (_, i) => include(`chapters/part-${i}.rst`));
      const text = JSON.stringify(entries, null, 4);
      assert.ok(text.length > 2 * MAX_LOG_BYTES);
      await writeFile(log, text);
      const head = await readLogHead(log);
      assert.ok(head.length <= MAX_LOG_BYTES + 2, `${head.length}`);
      assert.equal((JSON.parse(head) as unknown[]).length > 1000, true);
      assert.equal(leftOutOf(head).length, MAX_LEFT_OUT_WARNINGS);
      const short = JSON.stringify([include('a.rst')], null, 4);
      await writeFile(log, short);
      assert.equal(await readLogHead(log), short);
      assert.equal(await readLogHead(join(dir, 'none.json')), '');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
