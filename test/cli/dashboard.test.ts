import '../helpers/no-ci.ts';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { readFile, readdir, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createElement } from 'react';
import sharp from 'sharp';
import { Dashboard } from '../../cli/dashboard/dashboard.tsx';
import { HttpClient } from '../../src/client/http-client.ts';
import { cleanEnv, spawnConv, tempDir } from '../helpers/cli-helpers.ts';
import { startDaemon, type DaemonHandle } from '../helpers/daemon.ts';

/**
 * The ink dashboard against a real convd with a few conversions: rendered with
 * ink-testing-library (it works with ink 6 / React 19 here), frames asserted, keys written to
 * stdin. One run goes through `runDashboard`, the command's own entry, onto fake TTY streams.
 * The command itself (no server, no terminal) runs as the real binary.
 */

// ink decides at import time whether it runs in CI (then it draws only the last frame):
// helpers/no-ci.ts, imported first, clears that before ink is loaded.

let daemon: DaemonHandle;
let dir: { path: string; remove: () => Promise<void> };
let client: HttpClient;
/** Answers URL inputs with the first bytes of a PNG and then nothing: they stay `fetching`. */
let slow: http.Server;
let slowUrl: string;
const slowSockets = new Set<Socket>();
const ids: Record<'first' | 'second' | 'broken' | 'held', string> = { first: '', second: '', broken: '', held: '' };

const UP = '\u001B[A';
const DOWN = '\u001B[B';
const ENTER = '\r';
const ESC = '\u001B';

before(async () => {
  [daemon, dir] = await Promise.all([startDaemon({ args: ['--allow-private-urls'] }), tempDir('conv-dashboard-')]);
  client = new HttpClient({ baseUrl: daemon.baseUrl, apiKey: daemon.apiKey });
  const png = await sharp({ create: { width: 24, height: 16, channels: 3, background: '#3366cc' } }).png().toBuffer();
  await writeFile(join(dir.path, 'first.png'), png);
  await writeFile(join(dir.path, 'second.png'), png);
  await writeFile(join(dir.path, 'broken.png'), 'no image');
  slow = http.createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'image/png', 'content-length': String(png.length) });
    response.write(png.subarray(0, 8));
  });
  slow.on('connection', (socket) => {
    slowSockets.add(socket);
    socket.on('close', () => slowSockets.delete(socket));
  });
  await new Promise<void>((resolve) => slow.listen(0, '127.0.0.1', resolve));
  slowUrl = `http://127.0.0.1:${(slow.address() as AddressInfo).port}/held.png`;

  const submit = async (input: Parameters<HttpClient['createConversion']>[0]['input']) =>
    (await client.createConversion({ input, target: 'webp', wait: 10 })).id;
  ids.first = await submit({ kind: 'file', path: join(dir.path, 'first.png') });
  ids.second = await submit({ kind: 'file', path: join(dir.path, 'second.png') });
  ids.broken = await submit({ kind: 'file', path: join(dir.path, 'broken.png') });
  const held = await client.createConversion({ input: { kind: 'url', url: slowUrl }, target: 'webp' });
  ids.held = held.id;
});

after(async () => {
  for (const socket of slowSockets) socket.destroy();
  await new Promise<void>((resolve) => slow.close(() => resolve()));
  await client?.close();
  await daemon?.dispose();
  await dir?.remove();
});

async function until(test: () => boolean, what: string, frame: () => string | undefined, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (test()) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`timed out waiting for ${what}; last frame:\n${frame()}`);
}

/** The list line of a conversion in a frame. */
const lineOf = (frame: string, id: string) => frame.split('\n').find((line) => line.includes(id)) ?? '';

describe('conv dashboard (ink)', () => {
  it('shows the account and the conversions, filters by status, opens details, cancels and downloads', async () => {
    const { render } = await import('ink-testing-library');
    const view = render(createElement(Dashboard, { client, server: daemon.baseUrl, cwd: dir.path, color: false, pollMs: 150 }));
    const frame = () => view.lastFrame() ?? '';
    try {
      await until(() => Object.values(ids).every((id) => frame().includes(id)), 'every conversion listed', frame);
      let shown = frame();
      assert.match(shown, /plan Unmetered \(unmetered\)/);
      assert.match(shown, /credits unlimited/);
      assert.match(shown, /active 1\/\d+/, 'the held URL conversion is active');
      assert.match(lineOf(shown, ids.first), /succeeded/);
      assert.match(lineOf(shown, ids.broken), /failed/);
      assert.match(lineOf(shown, ids.held), /fetching/);
      // Newest first, the newest selected.
      assert.match(lineOf(shown, ids.held), /^› /);

      view.stdin.write('f');
      await until(() => frame().includes(ids.broken) && !frame().includes(ids.first), 'the failed filter', frame);
      shown = frame();
      assert.ok(!shown.includes(ids.held) && !shown.includes(ids.second));
      assert.match(shown, /1 shown/);

      view.stdin.write('s');
      await until(() => frame().includes(ids.first) && frame().includes(ids.second) && !frame().includes(ids.broken), 'the succeeded filter', frame);

      view.stdin.write('a');
      await until(() => Object.values(ids).every((id) => frame().includes(id)), 'all again', frame);
      view.stdin.write(DOWN);
      await until(() => /^› /.test(lineOf(frame(), ids.broken)), 'the selection moved down', frame);
      view.stdin.write(UP);
      await until(() => /^› /.test(lineOf(frame(), ids.held)), 'the selection moved up', frame);

      view.stdin.write(ENTER);
      await until(() => /name\s+held\.png/.test(frame()), 'the details of the held conversion', frame);
      assert.match(frame(), /status\s+fetching/);
      view.stdin.write(ESC);
      await until(() => frame().includes(ids.first), 'back to the list', frame);

      view.stdin.write('x');
      await until(() => frame().includes(`${ids.held} cancelled`), 'the cancel message', frame);
      await until(() => /cancelled/.test(lineOf(frame(), ids.held)), 'the list showing it cancelled', frame);
      assert.equal((await client.getConversion(ids.held)).status, 'cancelled');

      // Down to the newest succeeded one (second), then download it into the current directory.
      view.stdin.write(DOWN);
      view.stdin.write(DOWN);
      await until(() => /^› /.test(lineOf(frame(), ids.second)), 'second selected', frame);
      view.stdin.write('d');
      await until(() => /saved \S+second\.webp/.test(frame()), 'the download message', frame);
      const saved = await sharp(await readFile(join(dir.path, 'second.webp'))).metadata();
      assert.deepEqual([saved.format, saved.width, saved.height], ['webp', 24, 16]);

      view.stdin.write('x');
      await until(() => /is succeeded: only active conversions can be cancelled/.test(frame()), 'the refusal', frame);
      assert.equal((await client.getConversion(ids.second)).status, 'succeeded');
      assert.ok(!(await readdir(dir.path)).some((name) => name.endsWith('.part')));
    } finally {
      view.unmount();
    }
  });

  it('runs through runDashboard on fake TTY streams and ends on q', async () => {
    const { runDashboard } = await import('../../cli/dashboard/run.tsx');
    const stdout = Object.assign(new EventEmitter(), {
      isTTY: true,
      columns: 120,
      rows: 30,
      text: '',
      write(chunk: string) {
        stdout.text += chunk;
        return true;
      },
    });
    const stdin = Object.assign(new EventEmitter(), {
      isTTY: true,
      rawMode: false,
      setRawMode(mode: boolean) {
        stdin.rawMode = mode;
      },
      setEncoding() {},
      resume() {},
      pause() {},
      ref() {},
      unref() {},
      read: () => null as string | null,
    });
    const pending: string[] = [];
    stdin.read = () => pending.shift() ?? null;
    const press = (key: string) => {
      pending.push(key);
      stdin.emit('readable');
    };
    const done = runDashboard({
      client, server: daemon.baseUrl, cwd: dir.path, color: true, pollMs: 150,
      stdout: stdout as unknown as NodeJS.WriteStream, stdin: stdin as unknown as NodeJS.ReadStream, stderr: stdout as unknown as NodeJS.WriteStream,
    });
    try {
      await until(() => stdout.text.includes(ids.first), 'a frame with the conversions', () => stdout.text);
      assert.equal(stdin.rawMode, true, 'keys are read in raw mode');
      assert.match(stdout.text, /\u001B\[/, 'a terminal gets ANSI frames');
    } finally {
      // Quit whatever happened above: a dashboard left running keeps polling and the test process alive.
      press('q');
      await done;
    }
    assert.equal(stdin.rawMode, false, 'raw mode is left on exit');
  });

  it('says how to start a server when none is configured, and needs a terminal (exit 2)', async () => {
    const env = cleanEnv({ HOME: dir.path, XDG_CONFIG_HOME: join(dir.path, 'config') });
    const none = await spawnConv(['dashboard'], { env });
    assert.equal(none.code, 2);
    assert.match(none.stderr, /^error: no_server: /);
    assert.match(none.stderr, /npm start/);
    assert.match(none.stderr, /conv config set base-url http:\/\/127\.0\.0\.1:7700\/v1/);
    const piped = await spawnConv(['dashboard'], { env: { ...env, CONV_BASE_URL: daemon.baseUrl, CONV_API_KEY: daemon.apiKey } });
    assert.equal(piped.code, 2);
    assert.match(piped.stderr, /needs a terminal/);
    assert.equal(piped.stdout, '', 'no ANSI frames written to a pipe');
  });
});

