/**
 * large-text: 1 MiB of plain text and 1 MiB of Markdown (bench/lib/text-fixtures.ts) to pdf,
 * docx, odt, rtf and html, each once through the daemon (multipart submission with `wait`,
 * then download; the compiled daemon) against the fastest direct tool for that pair, run once by
 * hand the way a user would:
 *   - pandoc alone: `pandoc --standalone FILE -o OUT` (for .txt pandoc's default reader, Markdown;
 *     for .md GitHub's, as convd reads it);
 *   - LibreOffice alone: `soffice --headless --convert-to X FILE`, a cold run (it reads plain
 *     text, not Markdown), its profile made by an untimed first run;
 *   - pdf-lib alone for txt -> pdf (bench/lib/text-pdf-direct.ts, its own time without node's start);
 *   - md -> pdf has no single direct tool here (pandoc needs a PDF engine, LibreOffice reads no
 *     Markdown): pandoc's HTML printed by a cold `chromium --headless --print-to-pdf`, both timed.
 * Every direct run is at the engines' priority (niceness 10 in a session of its own whose
 * autogroup is niced too), as convd's engine processes run: a baseline at full priority beside
 * them would measure that policy (see bench/pdf-pages.ts). Every output of both sides is read back
 * (documentText: PDFium for PDF, pandoc's RTF reader, the package's XML) and must hold every
 * section's marker word; a direct tool whose result misses some is not counted as the fastest.
 * Two rounds per pair (convd, the direct tools, convd, the direct tools), a pause before each
 * side, the best time of each side and tool kept. Target per pair: convd at most 1.5x the fastest
 * direct tool, and at most 10 s.
 */
import { spawn } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { findChromium } from '../src/engines/html/find-chromium.ts';
import { findOffice } from '../src/engines/office/find-office.ts';
import { ENGINE_NICENESS, lowerSessionPriority, wrapped } from '../src/engines/process/group.ts';
import { documentText } from '../test/helpers/document-text.ts';
import { ROOT, startBenchDaemon, type BenchDaemon } from './lib/daemon.ts';
import { json, multipartBody } from './lib/http.ts';
import { WireConnection } from './lib/http-wire.ts';
import { freshDir, removeDir, tempDir } from './lib/processes.ts';
import { markdown, plainText, type TextFixture } from './lib/text-fixtures.ts';
import type { BenchResult } from './types.ts';

const SIZE = 1024 * 1024;
const TARGETS = ['pdf', 'docx', 'odt', 'rtf', 'html'] as const;
const TARGET_RATIO = 1.5;
const TARGET_MS = 10_000;
const MIME: Record<string, string> = { txt: 'text/plain', md: 'text/markdown' };
/** Rounds per pair, alternating convd and the direct tools (BENCH_LARGE_TEXT_ROUNDS). */
const ROUNDS = Math.max(1, Number(process.env.BENCH_LARGE_TEXT_ROUNDS ?? 2));
const SETTLE_MS = 2_000;

type Target = (typeof TARGETS)[number];

interface Source {
  format: 'txt' | 'md';
  path: string;
  data: Buffer;
  fixture: TextFixture;
}

/** A direct run: its name, and how long it took (ms), or why it does not count. */
interface Direct {
  tool: string;
  ms: number | null;
  problem?: string;
}

/** The markers a result misses (every section's, in any order), or null when it holds all. */
async function missing(target: Target, path: string, fixture: TextFixture): Promise<string | null> {
  try {
    const text = await documentText(target, path);
    const lost = fixture.markers.filter((marker) => !text.includes(marker));
    return lost.length === 0 ? null : `${lost.length} of ${fixture.markers.length} section markers missing (${lost.slice(0, 3).join(', ')}...)`;
  } catch (error) {
    return `cannot be read: ${error instanceof Error ? error.message : String(error)}`;
  }
}

/** Runs a command at the engines' priority and waits; ms from spawn to exit. */
function runNiced(command: string, args: string[], cwd: string): Promise<{ ms: number; stdout: string }> {
  const [file, argv] = wrapped(null, command, args, ENGINE_NICENESS);
  const started = performance.now();
  const child = spawn(file, argv, { cwd, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  lowerSessionPriority(child, ENGINE_NICENESS);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => { stdout += chunk.toString(); });
  child.stderr!.on('data', (chunk: Buffer) => { stderr += chunk.toString(); });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => {
      const ms = performance.now() - started;
      if (code === 0) resolve({ ms, stdout });
      else reject(new Error(`${command} ${args.join(' ')} exited with ${code}: ${stderr.trim().slice(-400)}`));
    });
  });
}

interface Tools {
  soffice: string | null;
  chromium: string | null;
  profile: string;
}

/** The direct candidates for one pair, each run once; outputs checked. */
async function directRuns(tools: Tools, source: Source, target: Target, dir: string): Promise<Direct[]> {
  const out = (tool: string) => join(dir, `${tool}.${target}`);
  const results: Direct[] = [];
  const attempt = async (tool: string, output: string, run: () => Promise<number>) => {
    try {
      const ms = await run();
      const problem = await missing(target, output, source.fixture);
      results.push(problem ? { tool, ms: null, problem } : { tool, ms });
    } catch (error) {
      results.push({ tool, ms: null, problem: error instanceof Error ? error.message : String(error) });
    }
  };
  if (target !== 'pdf') {
    const from = source.format === 'md' ? ['--from=gfm'] : [];
    await attempt('pandoc', out('pandoc'), async () => (await runNiced('pandoc', [...from, '--standalone', source.path, '-o', out('pandoc')], dir)).ms);
  }
  if (source.format === 'txt' && tools.soffice) {
    const soffice = tools.soffice;
    const filter = target === 'html' ? 'html:HTML (StarWriter)' : target;
    await attempt('LibreOffice', join(dir, 'lo', `text.${target}`), async () =>
      (await runNiced(soffice, ['--headless', '--norestore', `-env:UserInstallation=${pathToFileURL(tools.profile).href}`, '--convert-to', filter, '--outdir', join(dir, 'lo'), source.path], dir)).ms);
  }
  if (source.format === 'txt' && target === 'pdf') {
    await attempt('pdf-lib', out('pdf-lib'), async () => {
      const { stdout } = await runNiced(process.execPath, ['--import', 'tsx', join(ROOT, 'bench', 'lib', 'text-pdf-direct.ts'), source.path, out('pdf-lib')], ROOT);
      return (JSON.parse(stdout) as { ms: number }).ms;
    });
  }
  if (source.format === 'md' && target === 'pdf' && tools.chromium) {
    const chromium = tools.chromium;
    await attempt('pandoc + chromium', out('chromium'), async () => {
      const html = join(dir, 'pandoc.html');
      const first = await runNiced('pandoc', ['--from=gfm', '--standalone', '--metadata=title:text', source.path, '-o', html], dir);
      const second = await runNiced(chromium, ['--headless', '--no-sandbox', '--disable-gpu', `--user-data-dir=${join(dir, 'chromium-profile')}`, `--print-to-pdf=${out('chromium')}`, pathToFileURL(html).href], dir);
      return first.ms + second.ms;
    });
  }
  return results;
}

/** One conversion through convd: submission with `wait` to the downloaded file; ms. */
async function throughDaemon(daemon: BenchDaemon, connection: WireConnection, source: Source, target: string, output: string): Promise<number> {
  const { contentType, body } = multipartBody({ target, wait: '30' }, `text.${source.format}`, MIME[source.format]!, source.data);
  const auth = { authorization: `Bearer ${daemon.apiKey}` };
  const sent = performance.now();
  const created = await connection.request('POST', '/v1/conversions', { ...auth, 'content-type': contentType }, body);
  let conversion = json<{ id: string; status: string; error: unknown }>(created);
  while (conversion.status === 'queued' || conversion.status === 'processing') {
    await new Promise((resolve) => setTimeout(resolve, 50));
    conversion = json(await connection.request('GET', `/v1/conversions/${conversion.id}`, auth));
  }
  if (conversion.status !== 'succeeded') throw new Error(`${source.format} -> ${target}: ${conversion.status} ${JSON.stringify(conversion.error)}`);
  const download = await connection.request('GET', `/v1/conversions/${conversion.id}/download`, auth);
  if (download.status !== 200) throw new Error(`${source.format} -> ${target}: download answered ${download.status}`);
  const ms = performance.now() - sent;
  await writeFile(output, download.body);
  return ms;
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

/** A pause for what the last run left ending (a cold browser's or office's helper processes). */
const settle = () => new Promise((resolve) => setTimeout(resolve, SETTLE_MS));

/** Each tool's best time over the rounds; a tool not counted in any round stays not counted, with its reason. */
function bestOf(before: Direct[], now: Direct[]): Direct[] {
  return now.map((direct) => {
    const earlier = before.find((other) => other.tool === direct.tool);
    if (!earlier || earlier.ms === null) return direct;
    if (direct.ms === null) return direct;
    return direct.ms < earlier.ms ? direct : earlier;
  });
}

export async function benchLargeText(): Promise<BenchResult> {
  const dir = await tempDir('large-text');
  const notes: string[] = [];
  try {
    const office = await findOffice(process.env);
    const chromium = await findChromium(process.env);
    const tools: Tools = { soffice: office.ready ? office.soffice : null, chromium: chromium.ready ? chromium.path : null, profile: join(dir, 'lo-profile') };
    if (!office.ready) notes.push(`no LibreOffice for the direct runs: ${office.problem}`);
    if (!chromium.ready) notes.push(`no Chromium for md -> pdf's direct run: ${chromium.problem}`);
    const sources: Source[] = [];
    for (const [format, fixture] of [['txt', plainText(SIZE)], ['md', markdown(SIZE)]] as const) {
      const path = join(dir, `text.${format}`);
      await writeFile(path, fixture.text);
      sources.push({ format, path, data: await readFile(path), fixture });
    }
    // LibreOffice's profile, made by an untimed first run (as office-cold does).
    if (tools.soffice) {
      await freshDir(join(dir, 'lo-first'));
      await writeFile(join(dir, 'lo-first', 'first.txt'), 'profile\n');
      await runNiced(tools.soffice, ['--headless', '--norestore', `-env:UserInstallation=${pathToFileURL(tools.profile).href}`, '--convert-to', 'pdf', '--outdir', join(dir, 'lo-first'), join(dir, 'lo-first', 'first.txt')], dir);
    }

    const daemon = await startBenchDaemon({ dataDir: join(dir, 'data') });
    const connection = new WireConnection(daemon.host, daemon.port);
    const rows: { pair: string; convdMs: number; best: Direct | undefined; ratio: number; pass: boolean }[] = [];
    try {
      // Untimed: every pair once on a small file, so that the engines (the engine host, Chromium,
      // LibreOffice where a pair needs it) have started before the timed conversions.
      const warm = join(dir, 'warm');
      await freshDir(warm);
      for (const source of sources) {
        const small: Source = { ...source, data: Buffer.from(source.fixture.text.slice(0, 4000)) };
        for (const target of TARGETS) await throughDaemon(daemon, connection, small, target, join(warm, `${source.format}.${target}`));
      }
      for (const source of sources) {
        for (const target of TARGETS) {
          const pair = `${source.format} -> ${target}`;
          const pairDir = join(dir, `${source.format}-${target}`);
          await freshDir(pairDir);
          for (let round = 0; round < ROUNDS; round++) await freshDir(join(pairDir, `direct-${round}`));
          // Alternating rounds, the best of each side kept: a cold Chromium or LibreOffice leaves
          // processes ending for a second or two after it exits, which slowed whatever ran next.
          const convdTimes: number[] = [];
          let directs: Direct[] = [];
          let problem: string | null = null;
          for (let round = 0; round < ROUNDS; round++) {
            await settle();
            const output = join(pairDir, `convd-${round}.${target}`);
            convdTimes.push(await throughDaemon(daemon, connection, source, target, output));
            problem ??= await missing(target, output, source.fixture);
            await settle();
            directs = bestOf(directs, await directRuns(tools, source, target, join(pairDir, `direct-${round}`)));
          }
          if (problem) notes.push(`INVALID: convd's ${pair}: ${problem}`);
          const convdMs = Math.min(...convdTimes);
          const counted = directs.filter((direct) => direct.ms !== null).sort((a, b) => a.ms! - b.ms!);
          const best = counted[0];
          const ratio = best ? convdMs / best.ms! : Infinity;
          const pass = !problem && ratio <= TARGET_RATIO && convdMs <= TARGET_MS;
          rows.push({ pair, convdMs, best, ratio, pass });
          const line = `${pair}: convd ${seconds(convdMs)} vs ${directs.map((d) => `${d.tool} ${d.ms === null ? 'not counted' : seconds(d.ms)}`).join(', ')}: ${best ? `${ratio.toFixed(2)}x of ${best.tool}` : 'no direct tool'} ${pass ? 'PASS' : 'FAIL'}`;
          notes.push(line);
          for (const direct of directs) if (direct.problem) notes.push(`    ${direct.tool} not counted: ${direct.problem.slice(0, 300)}`);
          process.stderr.write(`large-text: ${line}\n`);
          await removeDir(pairDir).catch(() => undefined);
        }
      }
    } finally {
      connection.close();
      await daemon.stop();
    }
    const worst = rows.reduce((a, b) => (b.ratio > a.ratio ? b : a));
    const slowest = rows.reduce((a, b) => (b.convdMs > a.convdMs ? b : a));
    notes.push('every output of both sides read back (PDFium, pandoc\'s RTF reader, the packages\' XML): every section marker of the source in it; direct runs at the engines\' priority');
    return {
      title: '1 MiB of text and of Markdown -> pdf, docx, odt, rtf, html',
      figures: `${rows.filter((row) => row.pass).length} of ${rows.length} pairs within target; worst ratio ${worst.pair} (${worst.ratio.toFixed(2)}x), slowest ${slowest.pair} (${seconds(slowest.convdMs)})`,
      ratio: `${worst.ratio.toFixed(2)}x`,
      target: `each <= ${TARGET_RATIO}x of the fastest direct tool and <= ${TARGET_MS / 1000} s`,
      pass: rows.every((row) => row.pass) && !notes.some((note) => note.startsWith('INVALID')),
      notes,
    };
  } finally {
    await removeDir(dir);
  }
}
