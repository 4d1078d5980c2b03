/**
 * The HTML engine held to its limits, with real Chromium:
 * - `account` reuse: a page serves later conversions of its one account, and what a conversion
 *   wrote (localStorage, sessionStorage, IndexedDB, a cookie, Cache Storage, a BroadcastChannel)
 *   is gone for the next, at the same URL too; another account never gets the page; a timeout or
 *   a killed renderer replaces it; pages are bounded in uses and in number;
 * - WebRTC sends nothing (a UDP and a TCP canary see no packet from STUN, TURN and a data channel);
 * - a renderer past its memory limit fails its conversion memory_limit, the one beside it succeeds;
 * - a 40,000 px tall page becomes a WebP cut at 16,383 px and a PNG cut at 16,384;
 * - Chromium's own sandbox, where the engine says it is on, puts renderers in namespaces of their own;
 *   a browser that refuses it runs without it and says so once, one killed as it starts keeps it;
 * - a browser killed while a page opens in it: the page comes from the next browser.
 */
import assert from 'node:assert/strict';
import { createSocket } from 'node:dgram';
import { readlinkSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import sharp from 'sharp';
import { ConversionFailure } from '../../src/errors/api-error.ts';
import { WarmBrowser } from '../../src/engines/html/browser.ts';
import { findChromium } from '../../src/engines/html/find-chromium.ts';
import { createHtmlEngine, type HtmlEngine } from '../../src/engines/html/html-engine.ts';
import { renderersOf } from '../../src/engines/html/renderer-watch.ts';
import { residentBytes } from '../../src/engines/process/proc-readings.ts';
import type { HelperLifecycle } from '../../src/engines/process/supervisor.ts';
import type { EngineJob } from '../../src/engines/types.ts';
import { validateOptions } from '../../src/formats/options.ts';
import type { ConversionOptions } from '../../src/model/conversion.ts';
import { browserGroupsOf } from '../helpers/chromium.ts';
import { markersIn, READER, WRITER } from '../helpers/html-markers.ts';
import { pdfPageTexts } from '../helpers/pdf-text.ts';

const probeEngine = createHtmlEngine();
const status = await probeEngine.probe();
const skip = !status.available && process.env.CI !== 'true' ? `Chromium is not installed: ${status.detail ?? ''}` : false;

let dir: string;
let counter = 0;
const engines: HtmlEngine[] = [probeEngine];

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'convd-html-isolation-'));
});
after(async () => {
  for (const engine of engines) await engine.close?.();
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function engineWith(settings: Parameters<typeof createHtmlEngine>[0]): Promise<HtmlEngine> {
  const engine = createHtmlEngine(settings);
  engines.push(engine);
  assert.ok((await engine.probe()).available);
  return engine;
}

async function write(name: string, data: string): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, data);
  return path;
}

function job(engine: HtmlEngine, target: string, inputPath: string, raw: Record<string, unknown> = {}, extra: Partial<EngineJob> = {}): EngineJob {
  const pair = engine.pairs().find((p) => p.source === 'html' && p.target === target)!;
  const checked = validateOptions(pair, raw);
  assert.ok(checked.ok, JSON.stringify(checked));
  return {
    inputPath, outputPath: join(dir, `out-${++counter}.${target}`), source: 'html', target, variant: pair.variants[0]?.key ?? null,
    options: checked.options as ConversionOptions, signal: new AbortController().signal, onProgress: () => undefined, ...extra,
  };
}

function timed(ms: number): Pick<EngineJob, 'signal'> {
  const controller = new AbortController();
  setTimeout(() => controller.abort(new ConversionFailure('timeout', `The conversion took longer than the limit of ${ms / 1000} s.`)), ms).unref();
  return { signal: controller.signal };
}

describe('account reuse: a page serves its one account, and nothing of a conversion reaches the next', { skip }, () => {
  // Both at one URL: the same origin each time, so only the clean-up stands between them.
  for (const [what, sourceUrl] of [['uploads (a site of their own each)', undefined], ['a page fetched from one URL, three times', 'https://markers.example/page.html']] as const) {
    it(what, async () => {
      const engine = await engineWith({ reuse: 'account', pages: 2 });
      const writer = await write('writer.html', WRITER);
      const reader = await write('reader.html', READER);
      const at = sourceUrl ? { sourceUrl } : {};
      const wait = { wait_for_selector: '#done' };

      const first = job(engine, 'pdf', writer, wait, { tenant: 'acc_A', ...at, ...timed(30_000) });
      await engine.convert(first);
      const wrote = await markersIn(first.outputPath);
      const cache = sourceUrl ? 'MARK' : 'unavailable';
      assert.deepEqual(wrote, { local: 'MARK', session: 'MARK', cookie: 'MARK', idb: 'MARK', cache, broadcast: 'MARK' }, 'the writer wrote and read back every marker');
      const [page] = engine.idlePages();
      assert.equal(page?.tenant, 'acc_A');

      const second = job(engine, 'pdf', reader, wait, { tenant: 'acc_A', ...at, ...timed(30_000) });
      await engine.convert(second);
      assert.deepEqual(await markersIn(second.outputPath), { local: 'none', session: 'none', cookie: 'none', idb: 'none', cache: sourceUrl ? 'none' : 'unavailable', broadcast: 'none' });
      assert.deepEqual(engine.idlePages(), [{ id: page!.id, tenant: 'acc_A', uses: 2 }], 'the same page served A again');

      const third = job(engine, 'pdf', reader, wait, { tenant: 'acc_B', ...at, ...timed(30_000) });
      await engine.convert(third);
      assert.deepEqual(await markersIn(third.outputPath), { local: 'none', session: 'none', cookie: 'none', idb: 'none', cache: sourceUrl ? 'none' : 'unavailable', broadcast: 'none' });
      const idle = engine.idlePages();
      assert.equal(idle.length, 2);
      const ofB = idle.find((p) => p.tenant === 'acc_B');
      assert.ok(ofB && ofB.id !== page!.id && ofB.uses === 1, `B got a page of its own: ${JSON.stringify(idle)}`);
      assert.ok(idle.some((p) => p.id === page!.id && p.tenant === 'acc_A'), 'A\'s page is still A\'s');
    });
  }

  it('a timeout and a renderer killed for its memory each replace the page; uses and idle pages are bounded', async () => {
    const engine = await engineWith({ reuse: 'account', pages: 2, pageUses: 3, idlePages: 2, memoryLimitMb: 384 });
    const fine = await write('fine.html', '<!doctype html><p>fine</p>');
    const hung = await write('hung.html', '<!doctype html><script>while (true) {}</script>');
    const bomb = await write('bomb.html', '<!doctype html><script>const keep = []; for (let i = 0; i < 12; i++) keep.push(new Uint8Array(256 * 1024 * 1024).fill(1));</script>');
    const pageOf = (tenant: string) => engine.idlePages().find((p) => p.tenant === tenant)?.id;

    await engine.convert(job(engine, 'pdf', fine, {}, { tenant: 'acc_A' }));
    const first = pageOf('acc_A');
    await assert.rejects(engine.convert(job(engine, 'pdf', hung, {}, { tenant: 'acc_A', ...timed(2000) })), (error: ConversionFailure) => error.code === 'timeout');
    assert.equal(pageOf('acc_A'), undefined, 'the timed-out page is not kept');
    await engine.convert(job(engine, 'pdf', fine, {}, { tenant: 'acc_A' }));
    const second = pageOf('acc_A');
    assert.ok(second !== undefined && second !== first, 'a new page after the timeout');

    await assert.rejects(engine.convert(job(engine, 'pdf', bomb, {}, { tenant: 'acc_A', ...timed(60_000) })), (error: ConversionFailure) => error.code === 'memory_limit');
    assert.equal(pageOf('acc_A'), undefined, 'the crashed page is not kept');
    await engine.convert(job(engine, 'pdf', fine, {}, { tenant: 'acc_A' }));
    const third = pageOf('acc_A');
    assert.ok(third !== undefined && third !== second);
    // Three uses at most: this page served once; two more, and the next is another page.
    await engine.convert(job(engine, 'pdf', fine, {}, { tenant: 'acc_A' }));
    await engine.convert(job(engine, 'pdf', fine, {}, { tenant: 'acc_A' }));
    // (A page whose clean-up outran its time on a loaded machine is thrown away sooner: allowed.)
    assert.ok(engine.idlePages().every((p) => p.id !== third && p.uses <= 3), `replaced after its third conversion: ${JSON.stringify(engine.idlePages())}`);
    await engine.convert(job(engine, 'pdf', fine, {}, { tenant: 'acc_A' }));
    // Two idle pages at most: C's pushes out the least recently used (A's).
    await engine.convert(job(engine, 'pdf', fine, {}, { tenant: 'acc_B' }));
    await engine.convert(job(engine, 'pdf', fine, {}, { tenant: 'acc_C' }));
    // B's and C's pages, unless a clean-up outran its time on a loaded machine (that page is thrown away).
    const tenants = engine.idlePages().map((p) => p.tenant);
    assert.deepEqual(tenants, ['acc_B', 'acc_C'].filter((t) => tenants.includes(t)), `A's page pushed out: ${JSON.stringify(tenants)}`);
    assert.ok(tenants.length > 0, 'the last pages are kept');
  });

  it('a job without an account gets a fresh page that is not kept', async () => {
    const engine = await engineWith({ reuse: 'account', pages: 1 });
    await engine.convert(job(engine, 'pdf', await write('anonymous.html', '<!doctype html><p>x</p>')));
    assert.deepEqual(engine.idlePages(), []);
  });
});

describe('the browser held to its limits', { skip }, () => {
  it('WebRTC: a UDP and a TCP canary see nothing of STUN, TURN over UDP and TCP, and a data channel', async () => {
    const udp = createSocket('udp4');
    let packets = 0;
    udp.on('message', () => packets++);
    await new Promise<void>((resolve) => udp.bind(0, '127.0.0.1', () => resolve()));
    const port = udp.address().port;
    let connections = 0;
    const tcp: Server = createServer((socket) => {
      connections++;
      socket.destroy();
    });
    await new Promise<void>((resolve) => tcp.listen(port, '127.0.0.1', () => resolve()));
    try {
      const page = `<!doctype html><p id="out">start</p><script>
const seen = [];
const servers = [['stun:127.0.0.1:${port}'], ['turn:127.0.0.1:${port}?transport=udp'], ['turn:127.0.0.1:${port}?transport=tcp']];
for (const urls of servers) {
  const pc = new RTCPeerConnection({ iceServers: [{ urls, username: 'u', credential: 'c' }] });
  pc.createDataChannel('x');
  pc.onicecandidate = (event) => { if (event.candidate) seen.push(event.candidate.candidate); };
  pc.createOffer().then((offer) => pc.setLocalDescription(offer));
}
setTimeout(() => { document.getElementById('out').textContent = 'candidates ' + seen.length; document.body.insertAdjacentHTML('beforeend', '<i id="done"></i>'); }, 3000);
</script>`;
      const made = job(probeEngine, 'pdf', await write('webrtc.html', page), { wait_for_selector: '#done' }, timed(30_000));
      await probeEngine.convert(made);
      await new Promise((resolve) => setTimeout(resolve, 500));
      assert.match((await pdfPageTexts(made.outputPath)).join(' '), /candidates \d+/, 'the page ran');
      assert.equal(packets, 0, 'UDP packets reached the canary');
      assert.equal(connections, 0, 'TCP connections reached the canary');
    } finally {
      udp.close();
      tcp.close();
    }
  });

  it('a typed-array bomb fails memory_limit before its renderer passes the limit by 512 MB; the page beside it succeeds', async () => {
    const limitMb = 512;
    const engine = await engineWith({ memoryLimitMb: limitMb, pages: 2 });
    const bomb = await write('typed-bomb.html', '<!doctype html><script>const keep = []; for (let i = 0; i < 12; i++) keep.push(new Uint8Array(256 * 1024 * 1024).fill(1)); document.body.textContent = keep.length;</script>');
    const fine = await write('beside.html', '<!doctype html><p>beside the bomb</p><script>const end = Date.now() + 1500; while (Date.now() < end) {}</script>');
    // Warm: the browser is up before the sampling starts.
    await engine.convert(job(engine, 'pdf', fine));
    let peak = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const renderers = browserGroupsOf(process.pid).flatMap(renderersOf);
        for (const pid of renderers) peak = Math.max(peak, residentBytes(pid));
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    })();
    const [bombed, beside] = await Promise.allSettled([
      engine.convert(job(engine, 'pdf', bomb, {}, timed(60_000))),
      engine.convert(job(engine, 'pdf', fine, {}, timed(60_000))),
    ]);
    sampling = false;
    await sampler;
    assert.equal(bombed.status, 'rejected');
    const failure = (bombed as PromiseRejectedResult).reason as ConversionFailure;
    assert.equal(failure.code, 'memory_limit', failure.message);
    assert.match(failure.message, /512 MB/);
    assert.equal(beside.status, 'fulfilled', JSON.stringify(beside));
    assert.ok(peak > 0, 'the renderers were measured');
    assert.ok(peak < (limitMb + 512) * 1024 * 1024, `the renderer peaked at ${Math.round(peak / 1048576)} MB`);
    const next = job(engine, 'png', fine);
    await engine.convert(next);
    assert.equal((await sharp(next.outputPath).metadata()).format, 'png');
  });

  it('a 40,000 px tall page: WebP cut at 16,383 px, PNG at 16,384; a WebP window taller than WebP allows is refused by its option', async () => {
    const tall = await write('tall.html', '<!doctype html><body style="margin:0"><div style="height:40000px;background:linear-gradient(#c00,#00c)"></div></body>');
    const webp = job(probeEngine, 'webp', tall, { width: 200 }, timed(60_000));
    await probeEngine.convert(webp);
    const webpInfo = await sharp(webp.outputPath).metadata();
    assert.deepEqual([webpInfo.format, webpInfo.width, webpInfo.height], ['webp', 200, 16_383]);
    const png = job(probeEngine, 'png', tall, { width: 200 }, timed(60_000));
    await probeEngine.convert(png);
    const pngInfo = await sharp(png.outputPath).metadata();
    assert.deepEqual([pngInfo.format, pngInfo.width, pngInfo.height], ['png', 200, 16_384]);
    const pair = probeEngine.pairs().find((p) => p.source === 'html' && p.target === 'webp')!;
    const refused = validateOptions(pair, { height: 16_384, full_page: false });
    assert.equal(refused.ok, false);
  });

  it('the sandbox: on where the engine says so (renderers in network namespaces of their own), else said why', async () => {
    const plan = probeEngine.sandbox();
    assert.ok(plan, 'planned at the probe');
    assert.match(status.detail ?? '', /Chromium's sandbox (on|off)/);
    const slow = await write('sandboxed.html', '<!doctype html><p>sandbox</p><script>const end = Date.now() + 3000; while (Date.now() < end) {}</script>');
    const running = probeEngine.convert(job(probeEngine, 'pdf', slow, {}, timed(30_000)));
    // A renderer may end between its listing and the read of its namespace (Chromium starts
    // spare ones): the namespaces are those of the renderers still there, listed again until one is.
    const namespaceOf = (pid: number): string[] => {
      try {
        return [readlinkSync(`/proc/${pid}/ns/net`)];
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
        throw error;
      }
    };
    let theirs: string[] = [];
    for (let tries = 0; tries < 100 && theirs.length === 0; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      theirs = browserGroupsOf(process.pid).flatMap(renderersOf).flatMap(namespaceOf);
    }
    assert.ok(theirs.length > 0, 'the browser\'s renderers are found');
    const ours = readlinkSync('/proc/self/ns/net');
    await running;
    if (plan!.on) assert.ok(theirs.every((ns) => ns !== ours), `renderers share the daemon's network namespace: ${theirs.join(', ')}`);
    else assert.ok(theirs.every((ns) => ns === ours) && plan!.why.length > 0);
    // CI runs as root on Linux with user namespaces: there it must be on.
    if (process.env.CI === 'true' && process.getuid?.() === 0) assert.equal(plan!.on, true, JSON.stringify(plan));
  });

  it('a browser that refuses its sandbox (root without another user) starts without it and says why', { skip: process.getuid?.() !== 0 ? 'only as root' : false }, async () => {
    const chromium = await findChromium(process.env);
    assert.ok(chromium.ready);
    const told: HelperLifecycle[] = [];
    const warm = new WarmBrowser({
      executable: chromium.path, recycleAfter: 10, pageHeapMb: 512, rendererMemoryMb: 1024, reuse: 'none', pageUses: 1, idlePages: 1,
      sandbox: { on: true, how: 'as root, which Chromium refuses' }, onLifecycle: (event) => told.push(event),
    });
    try {
      const page = await warm.page(undefined);
      await page.page.setContent('<p>started</p>');
      assert.equal(await page.page.textContent('p'), 'started');
      await warm.release(page, { reusable: false, touched: new Set() });
      const plan = warm.sandboxInUse();
      assert.equal(plan.on, false);
      assert.match(plan.on ? '' : plan.why, /did not start with its sandbox/);
      // The daemon's log is told (chromium.unsandboxed), once.
      assert.deepEqual(told.filter((event) => event.type === 'unsandboxed'), [{ type: 'unsandboxed', helper: 'chromium', why: plan.on ? '' : plan.why }]);
    } finally {
      await warm.close();
    }
  });
  it('a browser killed while it starts is started again with its sandbox, which stays on', async () => {
    const planned = probeEngine.sandbox();
    if (!planned?.on) return;
    const chromium = await findChromium(process.env);
    assert.ok(chromium.ready);
    const told: HelperLifecycle[] = [];
    const warm = new WarmBrowser({
      executable: chromium.path, recycleAfter: 10, pageHeapMb: 512, rendererMemoryMb: 1024, reuse: 'none', pageUses: 1, idlePages: 1, sandbox: planned,
      onLifecycle: (event) => told.push(event),
    });
    const before = new Set(browserGroupsOf(process.pid));
    try {
      const opening = warm.page(undefined);
      let starting: number[] = [];
      for (let waited = 0; waited < 20_000 && starting.length === 0; waited += 5) {
        starting = browserGroupsOf(process.pid).filter((pgid) => !before.has(pgid));
        if (starting.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
      }
      assert.ok(starting.length > 0, 'a browser is starting');
      for (const pgid of starting) process.kill(-pgid, 'SIGKILL');
      const page = await opening;
      await page.page.setContent('<p>started</p>');
      assert.equal(await page.page.textContent('p'), 'started');
      await warm.release(page, { reusable: false, touched: new Set() });
      assert.deepEqual(warm.sandboxInUse(), planned, 'the sandbox is still on');
      assert.deepEqual(told.filter((event) => event.type === 'unsandboxed'), []);
    } finally {
      await warm.close();
    }
  });
  it('a browser killed while a page opens in it: the page is opened in the next browser', async () => {
    const chromium = await findChromium(process.env);
    assert.ok(chromium.ready);
    const warm = new WarmBrowser({
      executable: chromium.path, recycleAfter: 10, pageHeapMb: 512, rendererMemoryMb: 1024, reuse: 'none', pageUses: 1, idlePages: 1,
      sandbox: probeEngine.sandbox() ?? { on: false, why: 'not probed' },
    });
    const before = new Set(browserGroupsOf(process.pid));
    try {
      const first = await warm.page(undefined);
      const groups = browserGroupsOf(process.pid).filter((pgid) => !before.has(pgid));
      assert.ok(groups.length > 0, 'a browser runs');
      await warm.release(first, { reusable: false, touched: new Set() });
      // Stopped, the browser answers nothing: the next page's opening is in flight when it is
      // killed (the spare opened beside the first page is taken first, so two are asked for).
      for (const pgid of groups) process.kill(-pgid, 'SIGSTOP');
      const spare = warm.page(undefined);
      const opened = warm.page(undefined);
      await new Promise((resolve) => setTimeout(resolve, 300));
      for (const pgid of groups) process.kill(-pgid, 'SIGKILL');
      const began = Date.now();
      const page = await opened;
      assert.ok(Date.now() - began < 20_000, `opened ${Date.now() - began} ms after the kill`);
      assert.ok(!groups.includes(page.of.pid!), 'in a browser started after the kill');
      await page.page.setContent('<p>opened</p>');
      assert.equal(await page.page.textContent('p'), 'opened');
      await warm.release(page, { reusable: false, touched: new Set() });
      await spare.then((taken) => warm.release(taken, { reusable: false, touched: new Set() }), () => undefined);
    } finally {
      await warm.close();
    }
  });
});
