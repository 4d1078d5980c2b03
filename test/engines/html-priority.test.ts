/**
 * Chromium below the daemon's priority: while a page's script spins, every process of the
 * browser (the browser, its zygotes, renderers, GPU and utility processes) has every thread at
 * the engines' nice value and, with Linux's autogroup scheduling, its session's nice value too;
 * so do the crash reporter's handlers, which run in sessions of their own. With the sandbox as
 * planned here and with it off (as root, the browser then runs as root, which must not let it
 * raise its threads' priority).
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ConversionFailure } from '../../src/errors/api-error.ts';
import { createHtmlEngine } from '../../src/engines/html/html-engine.ts';
import { ENGINE_NICENESS } from '../../src/engines/process/group.ts';
import { validateOptions } from '../../src/formats/options.ts';
import type { ConversionOptions } from '../../src/model/conversion.ts';
import { browserGroupsOf } from '../helpers/chromium.ts';
import { waitFor } from '../helpers/engines-proc.ts';

const probe = createHtmlEngine();
const status = await probe.probe();
const skip = process.platform !== 'linux'
  ? 'reads /proc'
  : !status.available && process.env.CI !== 'true' ? `Chromium is not installed: ${status.detail ?? ''}` : false;

let dir: string;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'convd-html-priority-'));
});
after(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

interface Seen {
  pid: number;
  command: string;
  session: number;
  /** The nice value of its autogroup, or undefined where there is none. */
  groupNice: number | undefined;
  threadNices: number[];
}

function statFields(path: string): string[] {
  const stat = readFileSync(path, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

function see(pid: number): Seen | undefined {
  try {
    const fields = statFields(`/proc/${pid}/stat`);
    if (fields[0] === 'Z') return undefined;
    const group = existsSync(`/proc/${pid}/autogroup`) ? / nice (-?\d+)/.exec(readFileSync(`/proc/${pid}/autogroup`, 'utf8'))?.[1] : undefined;
    return {
      pid,
      command: readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').trim(),
      session: Number(fields[3]),
      groupNice: group === undefined ? undefined : Number(group),
      threadNices: readdirSync(`/proc/${pid}/task`).map((tid) => Number(statFields(`/proc/${pid}/task/${tid}/stat`)[16])),
    };
  } catch {
    return undefined;
  }
}

/**
 * Chromium's processes: those of the browser's session, and any that names this test process's
 * browser folder (the crash reporter's handler does, in its --database).
 */
function chromiumProcesses(browserPid: number): Seen[] {
  const mark = `convd-chromium-${process.pid}-`;
  const found: Seen[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const seen = see(Number(entry));
    if (seen && (seen.session === browserPid || seen.command.includes(mark))) found.push(seen);
  }
  return found;
}

function kind(seen: Seen): string {
  const program = seen.command.split(' ')[0]!;
  if (program.endsWith('crashpad_handler')) return 'crash handler';
  return /--type=(\S+)/.exec(seen.command)?.[1] ?? (seen.pid === seen.session ? 'browser' : program);
}

for (const sandbox of ['auto', 'off'] as const) {
  describe(`Chromium's processes run niced (sandbox ${sandbox})`, { skip }, () => {
    it('every thread of the browser, its zygotes, renderers, GPU and utility processes, and their session', async () => {
      const engine = createHtmlEngine({ sandbox });
      try {
        await engine.probe();
        const pair = engine.pairs().find((p) => p.source === 'html' && p.target === 'pdf')!;
        const checked = validateOptions(pair, {});
        assert.ok(checked.ok);
        const input = join(dir, `spin-${sandbox}.html`);
        await writeFile(input, '<!doctype html><p>spins</p><script>for (;;) {}</script>');
        const controller = new AbortController();
        const conversion = engine.convert({
          inputPath: input, outputPath: join(dir, `spin-${sandbox}.pdf`), source: 'html', target: 'pdf', variant: pair.variants[0]?.key ?? null,
          options: checked.options as ConversionOptions, signal: controller.signal, onProgress: () => undefined,
        });
        conversion.catch(() => undefined);
        let processes: Seen[] = [];
        let browserPid = 0;
        try {
          await waitFor(() => {
            const [browser] = browserGroupsOf(process.pid);
            if (browser === undefined) return false;
            browserPid = browser;
            processes = chromiumProcesses(browser);
            const kinds = new Set(processes.map(kind));
            return ['browser', 'zygote', 'renderer', 'gpu-process', 'utility'].every((k) => kinds.has(k));
          }, 60_000, 'the browser, a zygote, a renderer, the GPU and a utility process');
          // The crash handlers' sessions are lowered from outside once the browser answered.
          await waitFor(() => {
            processes = chromiumProcesses(browserPid);
            return processes.filter((seen) => kind(seen) === 'crash handler').every((seen) => seen.groupNice === undefined || seen.groupNice === ENGINE_NICENESS);
          }, 5_000, 'the crash handlers\' sessions lowered').catch(() => undefined);
        } finally {
          controller.abort(new ConversionFailure('timeout', 'The test ended the page.'));
          await conversion.catch(() => undefined);
        }
        for (const seen of processes) {
          const what = `${kind(seen)} (pid ${seen.pid})`;
          if (kind(seen) !== 'crash handler') assert.equal(seen.session, browserPid, `${what} runs in the browser's session: ${seen.command.slice(0, 120)}`);
          assert.ok(seen.threadNices.every((nice) => nice === ENGINE_NICENESS), `${what}: every thread at nice ${ENGINE_NICENESS}, not ${[...new Set(seen.threadNices)].join(', ')}`);
          if (seen.groupNice !== undefined) assert.equal(seen.groupNice, ENGINE_NICENESS, `${what}: its session's scheduling group at nice ${ENGINE_NICENESS}`);
        }
      } finally {
        await engine.close?.();
      }
    });
  });
}
