/**
 * html-invoices: 20 one-page HTML invoices -> PDF, in both of the HTML engine's modes:
 *   - default (`html_reuse none`, a fresh context per conversion): through convd (multipart
 *     submission with `wait`, then the download; the compiled daemon, its Chromium kept warm) with
 *     as many in flight as convd renders pages at once, against the same 20 rendered by the same
 *     Chromium driven directly with the same library and the same isolation (playwright-core: one
 *     browser, a context per invoice, the page served from memory): target <= 1.1x; and convd
 *     one at a time against a fresh `chromium --headless --print-to-pdf` per file (reported);
 *   - `html_reuse account` (one account's conversions on a warm page): convd one at a time against
 *     the cold runs (target >= 4x faster) and against Chromium driven directly with the same reuse
 *     (one page, each invoice at a site of its own, the same clean-up between two): target <= 1.1x.
 * Every PDF of every side is decoded: one page, its invoice's number in its text.
 */
import { availableParallelism } from 'node:os';
import { chmod, writeFile } from 'node:fs/promises';
import type { Browser } from 'playwright-core';
import { BROWSER_PREFERENCES, wrapperScript } from '../src/engines/html/launch.ts';
import { DEFAULT_SANDBOX_UID, describeSandbox, planSandbox, type SandboxPlan } from '../src/engines/html/sandbox.ts';
import { findParentDeathWrapper } from '../src/engines/process/group.ts';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { findChromium } from '../src/engines/html/find-chromium.ts';
import { pdfPrintOptions } from '../src/engines/html/render.ts';
import { pdfPageTexts } from '../test/helpers/pdf-text.ts';
import { startBenchDaemon, type BenchDaemon } from './lib/daemon.ts';
import { json, multipartBody } from './lib/http.ts';
import { WireConnection } from './lib/http-wire.ts';
import { freshDir, removeDir, spawnTracked, tempDir } from './lib/processes.ts';
import type { BenchResult } from './types.ts';

const COUNT = 20;
const PAGES = Math.max(1, Math.min(availableParallelism(), 64));
const ROUNDS = 3;
const DIRECT_TARGET = 1.1;
const COLD_TARGET = 4;
/** The flags convd launches Chromium with (src/engines/html/browser.ts), less the proxy. */
const FLAGS = ['--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

/**
 * The direct side's Chromium, launched with the isolation convd's has: its own sandbox where
 * convd's would be on (as root, as the same unprivileged uid through the same wrapper), else
 * --no-sandbox as convd's. Only the launch is shared; everything after it is the bench's own.
 */
async function launchDirect(executable: string, dir: string): Promise<{ browser: Browser; sandbox: SandboxPlan }> {
  const { chromium } = await import('playwright-core');
  const sandbox = await planSandbox({ mode: 'auto', uid: DEFAULT_SANDBOX_UID });
  const home = join(dir, 'direct-home');
  await freshDir(home);
  const preferences = join(dir, 'direct-preferences');
  await writeFile(preferences, BROWSER_PREFERENCES);
  const wrapper = join(dir, 'direct-chromium');
  const paths = { executable, pidFile: join(dir, 'direct-pid'), preferences, ownDirs: [home] };
  await writeFile(wrapper, wrapperScript(paths, await findParentDeathWrapper(), sandbox), { mode: 0o700 });
  if (sandbox.on && sandbox.runAs !== undefined) await chmod(dir, 0o711);
  const browser = await chromium.launch({
    executablePath: wrapper, args: [...FLAGS, ...(sandbox.on ? [] : ['--no-sandbox'])], chromiumSandbox: sandbox.on,
    env: { ...process.env, HOME: home },
  });
  return { browser, sandbox };
}

interface Invoice {
  name: string;
  html: string;
  number: string;
}

function invoices(): Invoice[] {
  return Array.from({ length: COUNT }, (_, i) => {
    const number = `INV-${2026_0000 + i * 37}`;
    const rows = Array.from({ length: 8 }, (_, r) => `<tr><td>Item ${r + 1}</td><td>${r + 1}</td><td>${(19.9 * (r + 1)).toFixed(2)} EUR</td></tr>`).join('');
    const html = `<!doctype html><html><head><meta charset="utf-8"><style>
body{font-family:sans-serif;margin:0;color:#222} header{display:flex;justify-content:space-between;border-bottom:3px solid #2a5db0;padding-bottom:8px}
table{width:100%;border-collapse:collapse;margin-top:24px} td,th{border-bottom:1px solid #ccc;padding:6px;text-align:left} .total{font-size:20px;text-align:right;margin-top:16px}
</style></head><body><header><h1>Invoice ${number}</h1><div>ACME Ltd<br>1 Main Street</div></header>
<table><thead><tr><th>Item</th><th>Qty</th><th>Price</th></tr></thead><tbody>${rows}</tbody></table><p class="total">Total ${(19.9 * 36).toFixed(2)} EUR</p></body></html>`;
    return { name: `invoice-${String(i + 1).padStart(2, '0')}`, html, number };
  });
}

async function checkAll(dir: string, list: Invoice[]): Promise<string[]> {
  const problems: string[] = [];
  for (const invoice of list) {
    try {
      const pages = await pdfPageTexts(join(dir, `${invoice.name}.pdf`));
      if (pages.length !== 1) problems.push(`INVALID: ${invoice.name}.pdf has ${pages.length} pages`);
      else if (!pages[0]!.includes(invoice.number)) problems.push(`INVALID: ${invoice.name}.pdf does not say ${invoice.number}`);
    } catch (error) {
      problems.push(`INVALID: ${invoice.name}.pdf cannot be read: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  return problems;
}

async function throughDaemon(daemon: BenchDaemon, connection: WireConnection, invoice: Invoice, outputDir: string): Promise<void> {
  const { contentType, body } = multipartBody({ target: 'pdf', wait: '30' }, `${invoice.name}.html`, 'text/html', Buffer.from(invoice.html));
  const auth = { authorization: `Bearer ${daemon.apiKey}` };
  const created = await connection.request('POST', '/v1/conversions', { ...auth, 'content-type': contentType }, body);
  let conversion = json<{ id: string; status: string; error: unknown }>(created);
  while (created.status === 202 && (conversion.status === 'queued' || conversion.status === 'processing')) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    conversion = json(await connection.request('GET', `/v1/conversions/${conversion.id}`, auth));
  }
  if (conversion.status !== 'succeeded') throw new Error(`${invoice.name}: ${created.status} ${conversion.status} ${JSON.stringify(conversion.error)}`);
  const download = await connection.request('GET', `/v1/conversions/${conversion.id}/download`, auth);
  if (download.status !== 200) throw new Error(`${invoice.name}: download answered ${download.status}`);
  await writeFile(join(outputDir, `${invoice.name}.pdf`), download.body);
}

/** Runs `work` over the invoices with `parallel` in flight; ms. */
async function timed(list: Invoice[], parallel: number, work: (invoice: Invoice, lane: number) => Promise<void>): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(Array.from({ length: parallel }, async (_, lane) => {
    while (next < list.length) await work(list[next++]!, lane);
  }));
  return performance.now() - started;
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
const each = (ms: number) => `${(ms / COUNT).toFixed(0)} ms`;

/** convd with `args`: the best of ROUNDS with `parallel` in flight (and one at a time, when asked). */
async function throughConvd(dir: string, list: Invoice[], args: string[], notes: string[], runs: { parallel: boolean; single: boolean }): Promise<{ parallel: number[]; single: number[] }> {
  const daemon = await startBenchDaemon({ dataDir: join(dir, `data-${args.join('-') || 'default'}`), args: ['--html-pages', String(PAGES), ...args] });
  const connections = Array.from({ length: PAGES }, () => new WireConnection(daemon.host, daemon.port));
  const parallel: number[] = [];
  const single: number[] = [];
  try {
    const warm = join(dir, 'warm');
    await freshDir(warm);
    const firstStarted = performance.now();
    await throughDaemon(daemon, connections[0]!, list[0]!, warm);
    notes.push(`convd ${args.join(' ') || '(default)'}: first invoice (Chromium starting) ${seconds(performance.now() - firstStarted)}, untimed`);
    await timed(list.slice(0, PAGES * 2), PAGES, (invoice, lane) => throughDaemon(daemon, connections[lane]!, invoice, warm));
    for (let round = 0; round < ROUNDS; round++) {
      const out = join(dir, 'convd');
      if (runs.parallel) {
        await freshDir(out);
        parallel.push(await timed(list, PAGES, (invoice, lane) => throughDaemon(daemon, connections[lane]!, invoice, out)));
        notes.push(...await checkAll(out, list));
      }
      if (runs.single) {
        await freshDir(out);
        single.push(await timed(list, 1, (invoice) => throughDaemon(daemon, connections[0]!, invoice, out)));
        notes.push(...await checkAll(out, list));
      }
    }
  } finally {
    for (const connection of connections) connection.close();
    await daemon.stop();
  }
  return { parallel, single };
}

/** The print convd makes with the default options (A4, 10 mm margins, backgrounds, a tagged PDF): both sides print the same. */
const PRINT = pdfPrintOptions({});

export async function benchHtml(): Promise<BenchResult> {
  const install = await findChromium(process.env);
  if (!install.ready) throw new Error(`Chromium is needed for this bench: ${install.problem}`);
  const dir = await tempDir('html');
  const list = invoices();
  const notes: string[] = [];
  try {
    const fresh = await throughConvd(dir, list, [], notes, { parallel: true, single: true });
    const reuse = await throughConvd(dir, list, ['--html-reuse', 'account'], notes, { parallel: false, single: true });

    // Direct: the same library and browser, in this process.
    const { browser, sandbox } = await launchDirect(install.path, dir);
    notes.push(`both sides' Chromium: ${describeSandbox(sandbox)}`);
    const directTimes: number[] = [];
    const reusedTimes: number[] = [];
    try {
      const render = async (invoice: Invoice, out: string) => {
        const context = await browser.newContext();
        try {
          await context.route('**/*', (route) => (route.request().url() === 'http://direct.invalid/index.html'
            ? route.fulfill({ status: 200, contentType: 'text/html', body: invoice.html })
            : route.abort()));
          const page = await context.newPage();
          await page.goto('http://direct.invalid/index.html', { waitUntil: 'load' });
          await writeFile(join(out, `${invoice.name}.pdf`), await page.pdf(PRINT));
        } finally {
          await context.close();
        }
      };
      const warm = join(dir, 'warm-direct');
      await freshDir(warm);
      await timed(list.slice(0, PAGES * 2), PAGES, (invoice) => render(invoice, warm));
      for (let round = 0; round < ROUNDS; round++) {
        const out = join(dir, 'direct');
        await freshDir(out);
        directTimes.push(await timed(list, PAGES, (invoice) => render(invoice, out)));
        notes.push(...await checkAll(out, list));
      }
      // The same reuse as convd's account mode, one at a time: one page in a context of its own,
      // each invoice at a site of its own, and between two the same clean-up convd makes.
      const reused = await browser.newContext();
      try {
        const page = await reused.newPage();
        const cdp = await reused.newCDPSession(page);
        let site = 0;
        const once = async (invoice: Invoice, out: string) => {
          const origin = `http://invoice-${++site}.invalid`;
          await reused.route('**/*', (route) => (route.request().url() === `${origin}/index.html`
            ? route.fulfill({ status: 200, contentType: 'text/html', body: invoice.html })
            : route.abort()));
          await page.goto(`${origin}/index.html`, { waitUntil: 'load' });
          await writeFile(join(out, `${invoice.name}.pdf`), await page.pdf(PRINT));
          await cdp.send('DOMStorage.clear', { storageId: { securityOrigin: origin, isLocalStorage: false } });
          await reused.unrouteAll({ behavior: 'ignoreErrors' });
          await page.goto('about:blank');
          await cdp.send('Storage.clearDataForOrigin', { origin, storageTypes: 'all' });
          await cdp.send('Network.clearBrowserCache');
          await cdp.send('Page.resetNavigationHistory');
          await reused.clearCookies();
        };
        const warmReuse = join(dir, 'warm-reuse');
        await freshDir(warmReuse);
        await timed(list.slice(0, 4), 1, (invoice) => once(invoice, warmReuse));
        for (let round = 0; round < ROUNDS; round++) {
          const out = join(dir, 'direct-reused');
          await freshDir(out);
          reusedTimes.push(await timed(list, 1, (invoice) => once(invoice, out)));
          notes.push(...await checkAll(out, list));
        }
      } finally {
        await reused.close();
      }
    } finally {
      await browser.close();
    }

    // Cold: a new headless Chromium per file.
    const coldDir = join(dir, 'cold');
    await freshDir(coldDir);
    const sources = join(dir, 'sources');
    await freshDir(sources);
    for (const invoice of list) await writeFile(join(sources, `${invoice.name}.html`), invoice.html);
    const coldMs = await timed(list, 1, async (invoice) => {
      const child = spawnTracked(install.path, [...FLAGS, '--no-sandbox', '--headless', `--user-data-dir=${join(dir, 'cold-profile')}`, '--no-pdf-header-footer', `--print-to-pdf=${join(coldDir, `${invoice.name}.pdf`)}`, pathToFileURL(join(sources, `${invoice.name}.html`)).href], { stdio: 'ignore' });
      const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
      if (code !== 0) throw new Error(`chromium --print-to-pdf exited with ${code}`);
    });
    notes.push(...await checkAll(coldDir, list));

    const freshMs = Math.min(...fresh.parallel);
    const directMs = Math.min(...directTimes);
    const freshSingleMs = Math.min(...fresh.single);
    const reuseSingleMs = Math.min(...reuse.single);
    const reusedDirectMs = Math.min(...reusedTimes);
    const freshOverDirect = freshMs / directMs;
    const reuseOverDirect = reuseSingleMs / reusedDirectMs;
    const reuseOverCold = coldMs / reuseSingleMs;
    return {
      title: `${COUNT} one-page HTML invoices -> PDF, both modes`,
      figures: `default: convd ${seconds(freshMs)} (${each(freshMs)} each, ${PAGES} in flight) vs playwright-core, a context each, ${seconds(directMs)}; `
        + `one at a time ${seconds(freshSingleMs)} vs cold ${seconds(coldMs)} (${(coldMs / freshSingleMs).toFixed(1)}x faster). `
        + `account: convd one at a time ${seconds(reuseSingleMs)} (${each(reuseSingleMs)} each) vs cold (${reuseOverCold.toFixed(1)}x faster) and vs one page reused directly ${seconds(reusedDirectMs)}`,
      ratio: `default ${freshOverDirect.toFixed(2)}x of direct; account ${reuseOverCold.toFixed(1)}x faster than cold, ${reuseOverDirect.toFixed(2)}x of direct reuse`,
      target: `default <= ${DIRECT_TARGET}x of direct; account >= ${COLD_TARGET}x faster than cold and <= ${DIRECT_TARGET}x of direct reuse`,
      pass: freshOverDirect <= DIRECT_TARGET && reuseOverCold >= COLD_TARGET && reuseOverDirect <= DIRECT_TARGET && !notes.some((note) => note.startsWith('INVALID')),
      notes: [
        `Chromium ${install.version}; best of ${ROUNDS} rounds each; default ${fresh.parallel.map(seconds).join(', ')}, one at a time ${fresh.single.map(seconds).join(', ')}; `
          + `direct ${directTimes.map(seconds).join(', ')}; account one at a time ${reuse.single.map(seconds).join(', ')}; direct reuse ${reusedTimes.map(seconds).join(', ')}; cold (one round) ${seconds(coldMs)}`,
        'every PDF of every side decoded: one page, its invoice number in its text',
        ...notes,
      ],
    };
  } finally {
    await removeDir(dir);
  }
}
