/**
 * (p) 20 one-page HTML invoices -> PDF through convd (multipart submission with `wait`, then the
 * download; the compiled daemon, its Chromium kept warm) against
 *   - the same 20 rendered by the same Chromium driven directly with the same library
 *     (playwright-core: one browser, a context per invoice, the page served from memory), with as
 *     many in flight as convd renders pages at once: what convd costs on top (target <= 1.3x);
 *   - a fresh `chromium --headless --print-to-pdf` per file, one after another, as a script would
 *     call Chromium without a service, against convd with one invoice in flight (target >= 4x);
 *     beside it, what Chromium itself does one at a time with a fresh context per invoice and
 *     with one page reused for all (each invoice at a site of its own): the bound on that ratio.
 * Every PDF of every side is decoded: one page, its invoice's number in its text.
 */
import { availableParallelism } from 'node:os';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { findChromium } from '../src/engines/html/find-chromium.ts';
import { pdfPageTexts } from '../test/helpers/pdf-text.ts';
import { startBenchDaemon, type BenchDaemon } from './lib/daemon.ts';
import { json, multipartBody } from './lib/http.ts';
import { WireConnection } from './lib/http-wire.ts';
import { freshDir, removeDir, spawnTracked, tempDir } from './lib/processes.ts';
import type { BenchResult } from './types.ts';

const COUNT = 20;
const PAGES = Math.max(1, Math.min(availableParallelism(), 64));
const ROUNDS = 3;
const DIRECT_TARGET = 1.3;
const COLD_TARGET = 4;
/** The flags convd launches Chromium with (src/engines/html/browser.ts), less the proxy. */
const FLAGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

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

export async function benchHtml(): Promise<BenchResult> {
  const install = await findChromium(process.env);
  if (!install.ready) throw new Error(`Chromium is needed for this bench: ${install.problem}`);
  const dir = await tempDir('html');
  const list = invoices();
  const notes: string[] = [];
  try {
    // convd: warmed by untimed conversions, then the best of ROUNDS with PAGES and with one in flight.
    const daemon = await startBenchDaemon({ dataDir: join(dir, 'data'), args: ['--html-pages', String(PAGES)] });
    const connections = Array.from({ length: PAGES }, () => new WireConnection(daemon.host, daemon.port));
    const convdParallel: number[] = [];
    const convdSingle: number[] = [];
    try {
      const warm = join(dir, 'warm');
      await freshDir(warm);
      const firstStarted = performance.now();
      await throughDaemon(daemon, connections[0]!, list[0]!, warm);
      notes.push(`convd's first invoice (Chromium starting) ${seconds(performance.now() - firstStarted)}, untimed`);
      await timed(list.slice(0, PAGES * 2), PAGES, (invoice, lane) => throughDaemon(daemon, connections[lane]!, invoice, warm));
      for (let round = 0; round < ROUNDS; round++) {
        const out = join(dir, 'convd');
        await freshDir(out);
        convdParallel.push(await timed(list, PAGES, (invoice, lane) => throughDaemon(daemon, connections[lane]!, invoice, out)));
        notes.push(...await checkAll(out, list));
        await freshDir(out);
        convdSingle.push(await timed(list, 1, (invoice) => throughDaemon(daemon, connections[0]!, invoice, out)));
        notes.push(...await checkAll(out, list));
      }
    } finally {
      for (const connection of connections) connection.close();
      await daemon.stop();
    }

    // Direct: the same library and browser, in this process.
    const { chromium } = await import('playwright-core');
    const browser = await chromium.launch({ executablePath: install.path, args: FLAGS });
    const directTimes: number[] = [];
    let directSingleMs = 0;
    let reusedPageMs = 0;
    try {
      const render = async (invoice: Invoice, out: string) => {
        const context = await browser.newContext();
        try {
          await context.route('**/*', (route) => (route.request().url() === 'http://direct.invalid/index.html'
            ? route.fulfill({ status: 200, contentType: 'text/html', body: invoice.html })
            : route.abort()));
          const page = await context.newPage();
          await page.goto('http://direct.invalid/index.html', { waitUntil: 'load' });
          await writeFile(join(out, `${invoice.name}.pdf`), await page.pdf({ width: '210mm', height: '297mm', printBackground: true, margin: { top: '10mm', right: '10mm', bottom: '10mm', left: '10mm' } }));
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
      // What the cold target asks of Chromium itself, one at a time: with a fresh context per
      // invoice (what convd does: DESIGN.md), and with one page used for every invoice, each at
      // a site of its own (what it would take instead).
      const single = join(dir, 'direct-single');
      await freshDir(single);
      directSingleMs = await timed(list, 1, (invoice) => render(invoice, single));
      notes.push(...await checkAll(single, list));
      const reused = await browser.newContext();
      try {
        const page = await reused.newPage();
        let current = '';
        await reused.route('**/*', (route) => (/^http:\/\/invoice-\d+\.invalid\/index\.html$/.test(route.request().url())
          ? route.fulfill({ status: 200, contentType: 'text/html', body: current })
          : route.abort()));
        const out = join(dir, 'direct-reused');
        await freshDir(out);
        let site = 0;
        reusedPageMs = await timed(list, 1, async (invoice) => {
          current = invoice.html;
          await page.goto(`http://invoice-${++site}.invalid/index.html`, { waitUntil: 'load' });
          await writeFile(join(out, `${invoice.name}.pdf`), await page.pdf({ width: '210mm', height: '297mm', printBackground: true, margin: { top: '10mm', right: '10mm', bottom: '10mm', left: '10mm' } }));
        });
        notes.push(...await checkAll(out, list));
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
      const child = spawnTracked(install.path, [...FLAGS, '--headless', `--user-data-dir=${join(dir, 'cold-profile')}`, '--no-pdf-header-footer', `--print-to-pdf=${join(coldDir, `${invoice.name}.pdf`)}`, pathToFileURL(join(sources, `${invoice.name}.html`)).href], { stdio: 'ignore' });
      const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
      if (code !== 0) throw new Error(`chromium --print-to-pdf exited with ${code}`);
    });
    notes.push(...await checkAll(coldDir, list));

    const convdMs = Math.min(...convdParallel);
    const directMs = Math.min(...directTimes);
    const singleMs = Math.min(...convdSingle);
    const overDirect = convdMs / directMs;
    const overCold = coldMs / singleMs;
    return {
      id: 'p',
      title: `${COUNT} one-page HTML invoices -> PDF`,
      figures: `convd ${seconds(convdMs)} (${each(convdMs)} each, ${PAGES} in flight) vs playwright-core directly ${seconds(directMs)}; convd one at a time ${seconds(singleMs)} vs a fresh chromium --print-to-pdf each ${seconds(coldMs)} (${coldMs / singleMs >= 1 ? `${overCold.toFixed(1)}x faster` : 'slower'})`,
      ratio: `${overDirect.toFixed(2)}x of direct`,
      target: `<= ${DIRECT_TARGET}x of direct, >= ${COLD_TARGET}x faster than cold`,
      pass: overDirect <= DIRECT_TARGET && overCold >= COLD_TARGET && !notes.some((note) => note.startsWith('INVALID')),
      notes: [
        `Chromium ${install.version}; best of ${ROUNDS} rounds each; convd rounds ${convdParallel.map(seconds).join(', ')}, one at a time ${convdSingle.map(seconds).join(', ')}; direct ${directTimes.map(seconds).join(', ')}`,
        `Chromium alone, one at a time: a fresh context per invoice ${seconds(directSingleMs)} (${(coldMs / directSingleMs).toFixed(1)}x faster than cold), one page for all, a site each ${seconds(reusedPageMs)} (${(coldMs / reusedPageMs).toFixed(1)}x): `
          + 'the cold target needs contexts reused across conversions, which DESIGN.md rules out (a fresh context per conversion)',
        'every PDF of every side decoded: one page, its invoice number in its text',
        ...notes,
      ],
    };
  } finally {
    await removeDir(dir);
  }
}
