/**
 * The README's quick start from a fresh clone: `git clone`, `npm
 * ci`, `npm start` in the background (its first build included), then `conv` from where the
 * README says (the clone's bin/, which `npm install -g .` links onto PATH) converts a file against
 * it, and the daemon stops on SIGTERM. The npm cache is warm wherever the suite runs (its own `npm
 * ci` filled it), so `--prefer-offline` installs without the registry where it can.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import sharp from 'sharp';
import { ROOT } from '../helpers/daemon.ts';

const git = spawnSync('git', ['-C', ROOT, 'rev-parse', 'HEAD'], { encoding: 'utf8' });
const required = process.env.CI === 'true';
const skip = git.status === 0 || required ? false : 'not a git checkout with git available';

function run(command: string, args: string[], options: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs: number }): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd: options.cwd, env: options.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

describe('the quick start from a fresh clone', { skip, timeout: 300_000 }, () => {
  let dir: string | undefined;
  let daemon: ChildProcess | undefined;

  after(async () => {
    if (daemon && daemon.exitCode === null) daemon.kill('SIGKILL');
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('npm ci, npm start, conv convert, stop', async () => {
    assert.equal(git.status, 0, 'git is required under CI');
    dir = await mkdtemp(join(tmpdir(), 'convd-clone-'));
    const clone = join(dir, 'convd');
    const env = { ...process.env, HOME: join(dir, 'home'), XDG_DATA_HOME: join(dir, 'data'), XDG_CONFIG_HOME: join(dir, 'config'), XDG_CACHE_HOME: join(dir, 'cache'), npm_config_cache: process.env.npm_config_cache ?? join(process.env.HOME ?? dir, '.npm') };
    const cloned = await run('git', ['clone', '--quiet', ROOT, clone], { cwd: dir, env, timeoutMs: 60_000 });
    assert.equal(cloned.code, 0, cloned.output);
    const installed = await run('npm', ['ci', '--prefer-offline', '--no-audit', '--no-fund'], { cwd: clone, env, timeoutMs: 240_000 });
    assert.equal(installed.code, 0, installed.output.slice(-2000));

    // `npm start` on a port of its own; stderr is no terminal, so the first key goes to a file.
    const started = spawn('npm', ['start'], { cwd: clone, env: { ...env, CONVD_PORT: '0' }, stdio: ['ignore', 'ignore', 'pipe'], detached: true });
    daemon = started;
    let stderr = '';
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`npm start did not listen within 120 s:\n${stderr}`)), 120_000);
      started.stderr!.on('data', (chunk: Buffer) => {
        stderr += chunk.toString();
        const listening = /convd listening on (http:\/\/\S+)/.exec(stderr);
        if (listening) {
          clearTimeout(timer);
          resolve(listening[1]!);
        }
      });
      started.once('exit', (code) => reject(new Error(`npm start exited with ${code}:\n${stderr}`)));
    });
    const keyFile = /^convd: api key file (.+)$/m.exec(stderr)?.[1];
    assert.ok(keyFile, stderr);
    const key = readFileSync(keyFile, 'utf8').trim();

    const work = join(dir, 'work');
    await run('mkdir', ['-p', work], { cwd: dir, env, timeoutMs: 5000 });
    await writeFile(join(work, 'photo.png'), await sharp({ create: { width: 80, height: 60, channels: 3, background: '#aa3300' } }).png().toBuffer());
    const converted = await run(join(clone, 'bin', 'conv'), ['convert', 'photo.png', '--to', 'webp', '-O', 'quality=70', '-o', '.'], {
      cwd: work, env: { ...env, CONV_BASE_URL: `${url}/v1`, CONV_API_KEY: key }, timeoutMs: 60_000,
    });
    assert.equal(converted.code, 0, converted.output);
    const meta = await sharp(join(work, 'photo.webp')).metadata();
    assert.deepEqual([meta.format, meta.width, meta.height], ['webp', 80, 60]);

    // npm start runs the daemon under npm: the whole group gets the signal, as from a terminal.
    process.kill(-started.pid!, 'SIGTERM');
    const code = await new Promise<number | null>((resolve) => (started.exitCode !== null ? resolve(started.exitCode) : started.once('exit', resolve)));
    assert.ok(code === 0 || code === null || code === 143, `stopped: ${code}\n${stderr.slice(-1000)}`);
  });
});
