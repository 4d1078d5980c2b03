/**
 * Real files come out right: what Debian's packages ship (test/helpers/real-files.ts), each sent
 * to a real daemon over HTTP as a user would send it, converted to its common targets, and every
 * result checked by a tool of its own (test/helpers/real-file-checks.ts). The suite prints a
 * table and the share converted right, which must be all of them; a target the service refuses
 * for a file is listed there with the words it must say. Under CI a missing file fails (`.ci/run`
 * installs its package); elsewhere it is skipped with a note.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { after, before, describe, it } from 'node:test';
import { api, startDaemon, type DaemonHandle } from '../helpers/daemon.ts';
import { readsPdfText, verify } from '../helpers/real-file-checks.ts';
import { PDFTOTEXT } from '../helpers/real-file-words.ts';
import { locate, REAL_FILES, uploadName, type KnownRefusal, type RealFile } from '../helpers/real-files.ts';

type Result = 'right' | 'wrong' | 'refused' | 'skipped';

interface Outcome {
  /** Where the case stands in the list: the table follows it, whatever order conversions end in. */
  order: number;
  file: string;
  package: string;
  target: string;
  result: Result;
  why: string;
}

interface Conversion {
  id: string;
  status: string;
  error: { code: string; message: string } | null;
}

const outcomes: Outcome[] = [];
let daemon: DaemonHandle;
let dir: string;
let counter = 0;
let started = 0;

/** Submits the file and waits for the end of its conversion (a long one past the first 30 s too). */
async function convert(path: string, target: string): Promise<Conversion> {
  const raw = await readFile(path);
  const form = new FormData();
  form.append('target', target);
  form.append('wait', '30');
  form.append('file', new Blob([path.endsWith('.gz') ? gunzipSync(raw) : raw]), uploadName(path));
  const created = await api(daemon, '/conversions', { method: 'POST', body: form });
  if (created.status === 422) return { id: '', status: 'failed', error: (created.body as { error: Conversion['error'] }).error };
  // 200 when it ended within the wait, 202 when it still runs (a large document on a busy machine).
  assert.ok(created.status === 200 || created.status === 202, `${created.status}: ${JSON.stringify(created.body)}`);
  let conversion = created.body as Conversion;
  while (conversion.status === 'queued' || conversion.status === 'processing') {
    const polled = await api(daemon, `/conversions/${conversion.id}?wait=30`);
    assert.equal(polled.status, 200, JSON.stringify(polled.body));
    conversion = polled.body as Conversion;
  }
  return conversion;
}

async function download(id: string, name: string): Promise<string> {
  const response = await fetch(`${daemon.baseUrl}/conversions/${id}/download`, { headers: { authorization: `Bearer ${daemon.apiKey}` } });
  assert.equal(response.status, 200);
  const path = join(dir, `${++counter}-${name}`);
  await writeFile(path, Buffer.from(await response.arrayBuffer()));
  return path;
}

async function outcomeOf(file: RealFile, path: string, target: string, refusal: KnownRefusal | undefined): Promise<Pick<Outcome, 'result' | 'why'>> {
  const conversion = await convert(path, target);
  if (conversion.status !== 'succeeded') {
    const said = `${conversion.error?.code}: ${conversion.error?.message}`;
    if (!refusal) return { result: 'wrong', why: `${conversion.status}, ${said}` };
    const worded = conversion.error?.code === refusal.code && refusal.message.test(conversion.error.message);
    return worded ? { result: 'refused', why: said } : { result: 'wrong', why: `refused in other words than ${refusal.code} ${refusal.message}: ${said}` };
  }
  if (refusal) return { result: 'wrong', why: `converted, though listed as refused (${refusal.message}): check the result and drop the refusal` };
  const output = await download(conversion.id, `${uploadName(path)}.${target}`);
  try {
    const verdict = await verify(file, path, target, output);
    return verdict.problems.length === 0 ? { result: 'right', why: verdict.seen } : { result: 'wrong', why: `${verdict.problems.join('; ')} (${verdict.seen})` };
  } catch (error) {
    return { result: 'wrong', why: `the result cannot be read: ${error instanceof Error ? error.message : String(error)}` };
  }
}

function table(): string {
  const rows = [...outcomes].sort((a, b) => a.order - b.order).map((o) => [o.file, o.package, o.target, o.result, o.why]);
  const widths = [0, 1, 2, 3].map((column) => Math.max(...rows.map((row) => row[column]!.length)));
  return rows.map((row) => row.map((cell, column) => (column < 4 ? cell.padEnd(widths[column]!) : cell)).join('  ')).join('\n');
}

function shareLine(): string {
  const count = (result: Result) => outcomes.filter((o) => o.result === result).length;
  const held = outcomes.length - count('skipped') - count('refused');
  const refusals = outcomes.filter((o) => o.result === 'refused').map((o) => `${o.file} -> ${o.target} (${o.why})`);
  const skipped = count('skipped') > 0 ? `, ${count('skipped')} skipped (what they need is not on this machine)` : '';
  const percent = held === 0 ? 100 : Math.floor((100 * count('right')) / held);
  return `real files: ${count('right')} of ${held} conversions right (${percent} %), ${refusals.length} known refusals${refusals.length > 0 ? `: ${refusals.join('; ')}` : ''}${skipped}; ${((Date.now() - started) / 1000).toFixed(0)} s`;
}

describe('real files come out right', { concurrency: 2 }, () => {
  before(async () => {
    started = Date.now();
    dir = await mkdtemp(join(tmpdir(), 'convd-real-files-'));
    daemon = await startDaemon();
  });

  after(async () => {
    console.log(`${table()}\n${shareLine()}`);
    await daemon?.dispose();
    await rm(dir, { recursive: true, force: true });
  });

  let order = 0;
  for (const file of REAL_FILES) {
    const path = locate(file.pattern);
    for (const target of file.targets) {
      const position = order++;
      const refusal = file.refusals?.find((r) => r.target === target);
      const lacking = !path
        ? `${file.pattern} is not on this machine (apt-get install ${file.package})`
        : !PDFTOTEXT && readsPdfText(file, target) ? 'pdftotext is not on this machine (apt-get install poppler-utils)' : undefined;
      const title = `${path ?? file.pattern} (${file.package}) -> ${target}`;
      if (lacking && !process.env.CI) {
        outcomes.push({ order: position, file: uploadName(file.pattern), package: file.package, target, result: 'skipped', why: lacking });
        it(title, { skip: lacking }, () => undefined);
        continue;
      }
      it(title, async () => {
        const outcome = lacking
          ? { result: 'wrong' as const, why: `${lacking}: .ci/run installs it` }
          : await outcomeOf(file, path!, target, refusal).catch((error: unknown) => ({ result: 'wrong' as const, why: error instanceof Error ? error.message : String(error) }));
        outcomes.push({ order: position, file: uploadName(path ?? file.pattern), package: file.package, target, ...outcome });
        assert.notEqual(outcome.result, 'wrong', `${uploadName(path ?? file.pattern)} -> ${target}: ${outcome.why}`);
      });
    }
  }
});
