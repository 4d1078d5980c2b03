/**
 * The admin socket is out of other users' reach from its first moment: it is bound inside a
 * directory that is 0700 before the bind, under any umask, whether convd made that directory or
 * found it (too open) from before; the admin commands reach the running daemon through it.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmod, mkdir, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { adminSocketPath } from '../../daemon/admin/socket.ts';
import { ensurePrivateDir } from '../../daemon/admin/private-dir.ts';
import { HAS_SETPRIV } from '../helpers/engines-proc.ts';
import { convdAdmin } from '../helpers/daemon.ts';
import { call, startConvd, tempDir, type Convd } from '../helpers/ops-support.ts';

const NOBODY = { uid: 65534, gid: 65534 };
const modeOf = async (path: string) => (await stat(path)).mode & 0o777;

describe('ensurePrivateDir', () => {
  it('makes a directory 0700, narrows one that is too open, and refuses a link or a file', async () => {
    const dir = await tempDir('convd-private-');
    await ensurePrivateDir(join(dir, 'fresh'));
    assert.equal(await modeOf(join(dir, 'fresh')), 0o700);
    await mkdir(join(dir, 'open'));
    await chmod(join(dir, 'open'), 0o777);
    await ensurePrivateDir(join(dir, 'open'));
    assert.equal(await modeOf(join(dir, 'open')), 0o700);
    await symlink(join(dir, 'open'), join(dir, 'link'));
    await assert.rejects(ensurePrivateDir(join(dir, 'link')), /must be a directory, not a link or a file/);
    await writeFile(join(dir, 'file'), '');
    await assert.rejects(ensurePrivateDir(join(dir, 'file')), /must be a directory/);
    await rm(dir, { recursive: true });
  });
});

describe('the admin socket under umask 000', () => {
  let fresh: Convd;
  let found: Convd;

  before(async () => {
    // Data dirs anyone may enter (as a shared parent could be): only the socket's directory keeps others out.
    const [freshDir, foundDir] = await Promise.all([tempDir(), tempDir()]);
    // A directory of the same name left 0777 from before, and a socket file where the old layout kept it.
    await mkdir(join(foundDir, 'admin'));
    await Promise.all([chmod(freshDir, 0o755), chmod(foundDir, 0o755), chmod(join(foundDir, 'admin'), 0o777)]);
    await writeFile(join(foundDir, 'convd.sock'), '');
    [fresh, found] = await Promise.all([startConvd({ dataDir: freshDir, umask: '000' }), startConvd({ dataDir: foundDir, umask: '000' })]);
  });
  after(async () => {
    await Promise.all([fresh?.dispose(), found?.dispose()]);
    await Promise.all([fresh, found].map((daemon) => daemon && rm(daemon.dataDir, { recursive: true, force: true })));
  });

  it('binds inside a 0700 directory, made so or narrowed before the bind; the socket itself is 0600', async () => {
    for (const daemon of [fresh, found]) {
      const socket = adminSocketPath(daemon.dataDir);
      assert.equal(dirname(socket), join(daemon.dataDir, 'admin'));
      assert.equal((await modeOf(dirname(socket))).toString(8), '700');
      assert.ok((await stat(socket)).isSocket());
      assert.equal((await modeOf(socket)).toString(8), '600');
    }
    await assert.rejects(stat(join(found.dataDir, 'convd.sock')), { code: 'ENOENT' }, 'the old socket path is cleared');
  });

  it('keeps the admin commands working on the running daemon', async () => {
    for (const daemon of [fresh, found]) {
      const created = await convdAdmin(daemon.dataDir, ['accounts', 'create', '--plan', 'pro', '--name', 'through-the-socket', '--json']);
      assert.equal(created.code, 0, created.stderr);
      const key = await convdAdmin(daemon.dataDir, ['keys', 'create', '--account', (created.json as { id: string }).id, '--json']);
      assert.equal(key.code, 0, key.stderr);
      // The running daemon knows the key at once: the command changed its store, not the files under it.
      const answer = await call(daemon, '/v1/account', { key: (key.json as { key: string }).key });
      assert.equal(answer.status, 200);
      assert.equal(answer.body.plan.id, 'pro');
      assert.equal((await convdAdmin(daemon.dataDir, ['maintenance', 'on'])).code, 0);
      assert.equal((await call(daemon, '/v1/account')).status, 503);
      assert.equal((await convdAdmin(daemon.dataDir, ['maintenance', 'off'])).code, 0);
      assert.equal((await call(daemon, '/v1/account')).status, 200);
    }
  });

  it('cannot be reached by another user', { skip: !HAS_SETPRIV || process.getuid?.() !== 0 ? 'needs root and setpriv' : false }, async () => {
    const probe = `require('node:net').connect(${JSON.stringify(adminSocketPath(fresh.dataDir))})`
      + `.on('connect', () => { console.log('connected'); process.exit(0); }).on('error', (e) => { console.log(e.code); process.exit(0); })`;
    const child = spawn('setpriv', [`--reuid=${NOBODY.uid}`, `--regid=${NOBODY.gid}`, '--clear-groups', process.execPath, '-e', probe], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    await new Promise((resolve) => child.once('close', resolve));
    assert.equal(out.trim(), 'EACCES');
  });
});
