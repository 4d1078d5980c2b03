/**
 * Admin commands pointed at a data dir no daemon used: they create nothing, and
 * say which data dir they looked in and how to name the right one; an account missing from a
 * real data dir is reported with that data dir too.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ROOT, startDaemon, type DaemonHandle } from '../helpers/daemon.ts';

const MAIN = join(ROOT, 'daemon', 'main.ts');

/** Runs `convd ARGS` with only the environment given (HOME and XDG_DATA_HOME in a temp dir). */
function convd(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number; stderr: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', MAIN, ...args], { cwd: ROOT, env: { PATH: process.env.PATH, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code: code ?? 1, stderr })));
}

describe('admin commands and the data dir', () => {
  let home: string;
  let daemon: DaemonHandle;

  before(async () => {
    home = await mkdtemp(join(tmpdir(), 'convd-admin-home-'));
    daemon = await startDaemon();
  });

  after(async () => {
    await daemon?.dispose();
    if (home) await rm(home, { recursive: true, force: true });
  });

  const defaultDir = () => join(home, 'data', 'convd');
  const env = () => ({ HOME: home, XDG_DATA_HOME: join(home, 'data') });

  it('every admin command on the default data dir, where no daemon ran: exit 4, the dir named, nothing created', async () => {
    const commands = [
      ['webhook-secret', '--account', 'acc_missing'],
      ['accounts', 'list'],
      ['accounts', 'create', '--plan', 'free'],
      ['accounts', 'update', 'acc_missing', '--credits', '5'],
      ['keys', 'list', '--account', 'acc_missing'],
      ['keys', 'create', '--account', 'acc_missing'],
      ['keys', 'revoke', 'key_missing'],
      ['maintenance', 'on'],
    ];
    for (const args of commands) {
      const { code, stderr } = await convd(args, env());
      assert.equal(code, 4, `${args.join(' ')}: ${stderr}`);
      assert.ok(stderr.includes(defaultDir()), `${args.join(' ')} names the data dir it looked in: ${stderr}`);
      assert.match(stderr, /--data-dir/);
      assert.match(stderr, /CONVD_DATA_DIR/);
      assert.match(stderr, /--config/);
      assert.ok(!existsSync(defaultDir()), `${args.join(' ')} created no data dir`);
    }
  });

  it('--data-dir naming a directory that does not exist: the same, and it is not created', async () => {
    const missing = join(home, 'not-here');
    const { code, stderr } = await convd(['accounts', 'list', '--data-dir', missing], env());
    assert.equal(code, 4, stderr);
    assert.ok(stderr.includes(missing), stderr);
    assert.ok(!existsSync(missing));
  });

  it("an account missing from the daemon's data dir: the data dir and the hint are in the message", async () => {
    const { code, stderr } = await convd(['webhook-secret', '--account', 'acc_missing', '--data-dir', daemon.dataDir], env());
    assert.equal(code, 4, stderr);
    assert.match(stderr, /no account acc_missing/);
    assert.ok(stderr.includes(daemon.dataDir), stderr);
    assert.match(stderr, /--data-dir/);
  });

  it("and the daemon's own data dir works as before", async () => {
    const { code, stderr } = await convd(['webhook-secret', '--account', daemon.accountId, '--data-dir', daemon.dataDir], env());
    assert.equal(code, 0, stderr);
  });
});
