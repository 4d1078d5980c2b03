/**
 * The first start's key never reaches a log: on a terminal it is shown there; otherwise it goes
 * to an owner-only file in the data dir (0600 from its first moment, under any umask) and the log
 * names that file and the account. The port is bound before the account is made, so a start
 * that cannot listen creates nothing and the next one still hands out the key.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:net';
import { readdir, readFile, rm, stat } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { bootstrapFirstAccount, FIRST_KEY_FILE } from '../../daemon/bootstrap.ts';
import { AccountService } from '../../src/service/accounts.ts';
import { defaultServiceConfig } from '../../src/service/config.ts';
import { LowdbStore } from '../../src/store/lowdb-store.ts';
import { call, runConvd, startConvd, tempDir, type Convd } from '../helpers/ops-support.ts';

const modeOf = async (path: string) => ((await stat(path)).mode & 0o777).toString(8);

describe('bootstrapFirstAccount', () => {
  let dir: string;
  before(async () => {
    dir = await tempDir('convd-bootstrap-');
  });
  after(() => rm(dir, { recursive: true, force: true }));

  async function run(terminal: boolean) {
    const store = await LowdbStore.open({ dir: null });
    const accounts = new AccountService(store, defaultServiceConfig());
    const lines: string[] = [];
    const out = { write: (line: string) => lines.push(line), terminal, dataDir: dir };
    const first = await bootstrapFirstAccount(accounts, out);
    assert.ok(first);
    assert.equal((await accounts.authenticate(first.key)).account.id, first.accountId);
    assert.equal(await bootstrapFirstAccount(accounts, out), null, 'once: the store has an account now');
    await store.close();
    return { first, text: lines.join('') };
  }

  it('shows the key on a terminal, as before, and writes no file', async () => {
    const { first, text } = await run(true);
    assert.equal(first.keyFile, null);
    assert.equal(text, `convd: created account ${first.accountId} (plan unmetered) and its API key (shown once, store it now):\nconvd: api key ${first.key}\n`);
    assert.deepEqual(await readdir(dir), []);
  });

  it('elsewhere writes it to an owner-only file and names the file and the account, never the key', async () => {
    const { first, text } = await run(false);
    assert.equal(first.keyFile, join(dir, FIRST_KEY_FILE));
    assert.ok(!text.includes(first.key) && !text.includes('cvk_'), text);
    assert.ok(text.includes(first.accountId));
    assert.match(text, new RegExp(`^convd: api key file ${join(dir, FIRST_KEY_FILE).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`, 'm'));
    assert.equal(await readFile(first.keyFile!, 'utf8'), `${first.key}\n`);
    assert.equal(await modeOf(first.keyFile!), '600');
    assert.deepEqual(await readdir(dir), [FIRST_KEY_FILE], 'no temporary file left beside it');
  });
});

describe('the first key of a daemon whose stderr is a pipe', () => {
  let daemon: Convd;
  before(async () => {
    // umask 000: the file must be 0600 by the daemon's own doing.
    daemon = await startConvd({ umask: '000' });
  });
  after(() => daemon.dispose());

  it('is not on stderr; the file the log names is 0600 and holds a working key', async () => {
    const stderr = daemon.stderr();
    assert.ok(!stderr.includes('cvk_'), 'no key on stderr');
    const file = join(daemon.dataDir, FIRST_KEY_FILE);
    assert.match(stderr, new RegExp(`^convd: created account ${daemon.accountId} \\(plan unmetered\\)`, 'm'));
    assert.ok(stderr.split('\n').includes(`convd: api key file ${file}`), stderr);
    assert.ok(stderr.indexOf(`api key file ${file}`) < stderr.indexOf('convd listening on'), 'before the line scripts wait for');
    assert.equal(await modeOf(file), '600');
    const key = (await readFile(file, 'utf8')).trim();
    const account = await call({ url: daemon.url, apiKey: key }, '/v1/account');
    assert.equal(account.status, 200);
    assert.equal(account.body.credits.type, 'unmetered');
  });

  it('is written once: a restart on the same data dir leaves the file as it is and names none', async () => {
    const file = join(daemon.dataDir, FIRST_KEY_FILE);
    const before = await stat(file);
    assert.equal(await daemon.stop(), 0);
    const again = await startConvd({ dataDir: daemon.dataDir, apiKey: daemon.apiKey, accountId: daemon.accountId });
    try {
      assert.doesNotMatch(again.stderr(), /created account|api key/);
      assert.equal((await stat(file)).mtimeMs, before.mtimeMs);
      assert.equal((await call(again, '/v1/account')).status, 200);
    } finally {
      await again.dispose();
    }
  });
});

describe('a start that cannot listen', () => {
  let taken: Server;
  let port: number;
  let dataDir: string;
  before(async () => {
    taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    port = (taken.address() as AddressInfo).port;
    dataDir = await tempDir();
  });
  after(async () => {
    await new Promise((resolve) => taken.close(resolve));
    await rm(dataDir, { recursive: true, force: true });
  });

  it('creates no account and no key file (API port or metrics port taken); the next start does', async () => {
    for (const args of [['--port', String(port)], ['--port', '0', '--metrics-listen', `127.0.0.1:${port}`]]) {
      const failed = await runConvd(['serve', '--data-dir', dataDir, ...args], { CONVD_LOG_FORMAT: 'json' });
      assert.equal(failed.code, 1, failed.stderr);
      assert.match(failed.stderr, /EADDRINUSE/);
      assert.doesNotMatch(failed.stderr, /created account|api key/);
      await assert.rejects(stat(join(dataDir, FIRST_KEY_FILE)), { code: 'ENOENT' });
      const accounts = await runConvd(['accounts', 'list', '--json', '--data-dir', dataDir]);
      assert.equal(accounts.code, 0, accounts.stderr);
      assert.deepEqual(JSON.parse(accounts.stdout), []);
    }
    const daemon = await startConvd({ dataDir });
    try {
      assert.match(daemon.stderr(), /^convd: api key file /m);
      assert.equal((await call(daemon, '/v1/account')).status, 200);
    } finally {
      await daemon.dispose();
    }
  });
});
