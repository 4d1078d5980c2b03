/**
 * Hostile documents through a real daemon: each ends `failed` with a stable code,
 * costs nothing, leaves nothing in the daemon's scratch directories, and the next document
 * converts on a pool of the same size. Then the pool's end: no soffice outlives the daemon,
 * stopped (SIGTERM) or killed (kill -9); the profiles a killed daemon left are removed by the
 * next one.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import sharp from 'sharp';
import { findOffice } from '../../src/engines/office/find-office.ts';
import { pipeFilesOf } from '../../src/engines/office/profiles.ts';
import type { PublicConversion } from '../../src/model/conversion.ts';
import { startDaemon, type DaemonHandle } from '../helpers/daemon.ts';
import { billionLaughsDocx, manyPagesPdf, storedZip } from '../helpers/hostile-files.ts';
import { OFFICE_MARKER, makeOfficeFixtures } from '../helpers/office.ts';
import { pdfPageTexts } from '../helpers/pdf-text.ts';
import { blobEntries, download, meteredClient, remainingCredits, uploadFile, waitForEnd, waitUntil, type Client } from '../helpers/registry-pairs-daemon.ts';
import { workFiles } from '../helpers/work-files.ts';

const office = await findOffice(process.env);
const required = process.env.CI === 'true';
const skip = office.ready || required ? false : `LibreOffice is not installed here: ${office.problem}`;

/** Two instances, and an office time limit short enough for a test, long for a small document. */
const INSTANCES = 2;
const OFFICE_LIMIT = '8s';
const PAGES = 10_000;

let dir: string;
let daemon: DaemonHandle;
let client: Client;

before(async () => {
  if (skip) return;
  assert.ok(office.ready, `LibreOffice is required under CI: ${office.ready ? '' : office.problem}`);
  dir = await mkdtemp(join(tmpdir(), 'convd-hostile-docs-'));
  await makeOfficeFixtures(office, dir);
  // No quick lane: its warm spare instances would be counted with the pool's below.
  daemon = await startDaemon({ args: ['--office-instances', String(INSTANCES), '--quick-lane', '0', '--engine-timeout-ms', `office=${OFFICE_LIMIT}`] });
  client = await meteredClient(daemon, 'pro');
});

after(async () => {
  await daemon?.dispose();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** soffice.bin processes whose profile a process of `pid` made (the daemon's or a dead one's). */
function sofficeOf(pid: number): number[] {
  return readdirSync('/proc').filter((entry) => /^\d+$/.test(entry)).map(Number).filter((candidate) => {
    try {
      const stat = readFileSync(`/proc/${candidate}/stat`, 'utf8');
      const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
      return !'ZX'.includes(state) && readFileSync(`/proc/${candidate}/cmdline`, 'utf8').includes(`convd-office-${pid}-`);
    } catch {
      return false;
    }
  });
}

function profilesOf(pid: number): string[] {
  return readdirSync(tmpdir()).filter((name) => name.startsWith(`convd-office-${pid}-`));
}

/** The socket files in /tmp of the instances with these profiles (a killed soffice leaves them). */
function pipeFilesLeft(profiles: string[]): string[] {
  return profiles.flatMap((profile) => pipeFilesOf(join(tmpdir(), profile))).filter((path) => existsSync(path));
}

async function submit(path: string, name: string, fields: Record<string, string>): Promise<PublicConversion> {
  const created = await uploadFile(client, { wait: '30', ...fields }, path, name);
  assert.ok(created.status === 200 || created.status === 202, `${created.status} ${JSON.stringify(created.body)}`);
  return ['succeeded', 'failed'].includes(created.body.status) ? created.body : waitForEnd(client, created.body.id, 120_000);
}

async function expectFailure(path: string, name: string, fields: Record<string, string>, code: string, message?: RegExp): Promise<void> {
  const before = await remainingCredits(client);
  const done = await submit(path, name, fields);
  assert.equal(done.status, 'failed', `${name}: ${JSON.stringify(done)}`);
  assert.equal(done.error?.code, code, `${name}: ${done.error?.message}`);
  if (message) assert.match(done.error!.message, message);
  assert.ok(!done.error!.message.includes(daemon.dataDir) && !done.error!.message.includes(tmpdir() + '/'), `no server path: ${done.error!.message}`);
  assert.equal(done.credits, 0);
  assert.equal(await remainingCredits(client), before, 'nothing charged');
  await waitUntil(async () => (await workFiles(daemon.dataDir)).length === 0, 3000, `no file in blobs/work (${(await workFiles(daemon.dataDir)).join(', ')})`);
  assert.deepEqual(await blobEntries(daemon, 'spool'), []);
}

/** A small document still converts, read back by its text: the pool is whole and not slowed. */
async function expectSmallDocumentConverts(): Promise<void> {
  const done = await submit(join(dir, 'fixture.docx'), 'report.docx', { target: 'pdf' });
  assert.equal(done.status, 'succeeded', JSON.stringify(done.error));
  const output = join(dir, `${done.id}.pdf`);
  await download(client, done.id, output);
  assert.match((await pdfPageTexts(output)).join('\n'), new RegExp(OFFICE_MARKER));
}

describe('hostile documents through the daemon', { skip }, () => {
  it('a docx of random bytes, a truncated xlsx, a billion-laughs docx, a protected file without its password: input_invalid', async () => {
    const write = async (name: string, bytes: Uint8Array) => {
      const path = join(dir, name);
      await writeFile(path, bytes);
      return path;
    };
    await expectFailure(await write('random.docx', storedZip('word/document.xml', randomBytes(4096))), 'random.docx', { target: 'pdf' }, 'input_invalid');
    const xlsx = await readFile(join(dir, 'fixture.xlsx'));
    await expectFailure(await write('truncated.xlsx', xlsx.subarray(0, xlsx.length >> 1)), 'truncated.xlsx', { target: 'pdf' }, 'input_invalid');
    await expectFailure(await write('laughs.docx', billionLaughsDocx()), 'laughs.docx', { target: 'pdf' }, 'input_invalid');
    await expectFailure(join(dir, 'protected.odt'), 'protected.odt', { target: 'pdf' }, 'input_invalid', /password/i);
    await expectFailure(join(dir, 'protected.odt'), 'protected.odt', { target: 'pdf', password: 'wrong' }, 'input_invalid', /password/i);
    await expectSmallDocumentConverts();
  });

  it('a spreadsheet of 1,000,000 rows (csv -> xlsx: LibreOffice; to pdf the data engine prints a page) runs into the time limit; the instance is replaced, the next document converts', async () => {
    const rows = join(dir, 'rows.csv');
    await writeFile(rows, `name,value\n${Array.from({ length: 1_000_000 }, (_, i) => `row ${i},${i}`).join('\n')}\n`);
    // Every instance seen while the spreadsheet hangs, and whether its pipe files were there.
    const pid = daemon.process.pid!;
    const seen = new Set<string>();
    let pipesSeen = 0;
    const watch = setInterval(() => {
      for (const profile of profilesOf(pid)) seen.add(profile);
      pipesSeen = Math.max(pipesSeen, pipeFilesLeft([...seen]).length);
    }, 100);
    try {
      await expectFailure(rows, 'rows.csv', { target: 'xlsx' }, 'timeout');
    } finally {
      clearInterval(watch);
    }
    await waitUntil(() => sofficeOf(pid).length <= INSTANCES, 5000, 'the hung instance to be gone');
    const gone = () => [...seen].filter((profile) => !profilesOf(pid).includes(profile));
    await waitUntil(() => gone().length >= 1, 5000, 'the hung instance\'s profile to be removed');
    const replaced = gone();
    assert.ok(pipesSeen >= 2, 'a running instance has its two pipe files (else the check below proves nothing)');
    await waitUntil(() => pipeFilesLeft(replaced).length === 0, 3000, `the killed instance's pipe files to be removed (${pipeFilesLeft(replaced).join(', ')})`);
    await expectSmallDocumentConverts();
    assert.ok(sofficeOf(daemon.process.pid!).length <= INSTANCES, 'never more instances than configured');
  });

  it(`a PDF of ${PAGES.toLocaleString('en')} pages: page ${(PAGES - 1).toLocaleString('en')} renders, page ${(PAGES + 1).toLocaleString('en')} is input_invalid and says why`, async () => {
    const path = join(dir, 'pages.pdf');
    await writeFile(path, await manyPagesPdf(PAGES));
    const done = await submit(path, 'pages.pdf', { target: 'png', page: String(PAGES - 1), dpi: '72' });
    assert.equal(done.status, 'succeeded', JSON.stringify(done.error));
    const output = join(dir, `${done.id}.png`);
    await download(client, done.id, output);
    const meta = await sharp(output).metadata();
    assert.deepEqual([meta.format, meta.width, meta.height], ['png', 612, 792]);
    await expectFailure(path, 'pages.pdf', { target: 'png', page: String(PAGES + 1) }, 'input_invalid', /10,000 pages; page 10,001 does not exist/);
  });
});

describe('no soffice outlives the daemon', { skip }, () => {
  it('SIGTERM: the instances end with the daemon and their profiles are removed', async () => {
    await expectSmallDocumentConverts();
    const pid = daemon.process.pid!;
    assert.ok(sofficeOf(pid).length >= 1, 'an instance runs');
    const profiles = profilesOf(pid);
    assert.ok(profiles.length >= 1);
    await daemon.stop();
    await waitUntil(() => sofficeOf(pid).length === 0, 5000, 'every soffice to end');
    for (const profile of profiles) assert.ok(!existsSync(join(tmpdir(), profile)), `${profile} removed`);
  });

  it('kill -9: the instances die with it; the next daemon removes the profiles it left', async () => {
    daemon = await daemon.restart();
    client = await meteredClient(daemon, 'pro');
    await expectSmallDocumentConverts();
    const killed = daemon.process.pid!;
    assert.ok(sofficeOf(killed).length >= 1, 'an instance runs');
    const left = profilesOf(killed);
    await daemon.kill();
    await waitUntil(() => sofficeOf(killed).length === 0, 5000, 'every soffice to die with the daemon');
    assert.ok(left.every((profile) => existsSync(join(tmpdir(), profile))), 'a killed daemon cannot remove its profiles');
    assert.ok(pipeFilesLeft(left).length > 0, 'nor the pipe files of its killed instances');
    daemon = await daemon.restart();
    client = await meteredClient(daemon, 'pro');
    await expectSmallDocumentConverts();
    assert.deepEqual(profilesOf(killed), [], 'the next pool removed them');
    assert.deepEqual(pipeFilesLeft(left), [], 'and their pipe files');
  });
});
