/**
 * The docs hold what runs: every `sh` block of the README runs when pasted (the
 * quick start against a real daemon, with `conv` on PATH as `npm install -g .` puts it there);
 * blocks marked `sh network` (an install, a long-running start) are only checked by `bash -n`, as
 * is every shell block of docs/; no page names a path of this machine; every relative link leads
 * to a file and a heading that exist.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import sharp from 'sharp';
import { ROOT, startDaemon, type DaemonHandle } from '../helpers/daemon.ts';

const PAGES = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((name) => name.endsWith('.md')).map((name) => `docs/${name}`)];
const MAN_PAGES = readdirSync(join(ROOT, 'man')).map((name) => `man/${name}`);

interface Block {
  page: string;
  line: number;
  info: string;
  code: string;
}

function blocksOf(page: string): Block[] {
  const lines = readFileSync(join(ROOT, page), 'utf8').split('\n');
  const blocks: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (!lines[i]!.startsWith('```')) continue;
    const start = i;
    const info = lines[i]!.slice(3).trim();
    const body: string[] = [];
    for (i++; i < lines.length && !lines[i]!.startsWith('```'); i++) body.push(lines[i]!);
    blocks.push({ page, line: start + 1, info, code: body.join('\n') });
  }
  return blocks;
}

function bash(args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv; input?: string } = {}): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    const child = spawn('bash', args, { cwd: options.cwd, env: options.env, stdio: ['pipe', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stdin.end(options.input ?? '');
    child.on('close', (code) => resolve({ code: code ?? 1, output }));
  });
}

const slug = (heading: string) => heading.trim().toLowerCase().replace(/[^\w\- ]/g, '').replace(/ /g, '-');

function anchorsOf(page: string): Set<string> {
  const anchors = new Set<string>();
  let fenced = false;
  for (const line of readFileSync(join(ROOT, page), 'utf8').split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    const heading = /^#{1,6} (.*)$/.exec(line);
    if (heading && !fenced) anchors.add(slug(heading[1]!));
  }
  return anchors;
}

describe('the docs', () => {
  it('name no path of this machine', () => {
    for (const page of [...PAGES, ...MAN_PAGES]) {
      const text = readFileSync(join(ROOT, page), 'utf8');
      for (const pattern of [/\/work\//, /\/root\//, /\/tmp\/convd-/, /shared\/spec\//, /shared\/DESIGN/]) {
        assert.doesNotMatch(text, pattern, `${page} names ${pattern}`);
      }
    }
  });

  it('link to files and headings that exist', () => {
    for (const page of PAGES) {
      // Links in prose only: code (fenced or inline) shows text, links nothing.
      const text = readFileSync(join(ROOT, page), 'utf8').replace(/^```[\s\S]*?^```/gm, '').replace(/`[^`\n]*`/g, '');
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/.test(target!)) continue; // http(s), mailto
        const [file, anchor] = target!.split('#');
        const path = file ? join(ROOT, dirname(page), file) : join(ROOT, page);
        assert.ok(existsSync(path), `${page}: ${target} leads to no file`);
        if (anchor && path.endsWith('.md')) assert.ok(anchorsOf(path.slice(ROOT.length)).has(anchor), `${page}: ${target} leads to no heading`);
      }
    }
  });

  it('every shell block of README and docs/ is valid shell (bash -n); none is joined with ·', async () => {
    for (const block of PAGES.flatMap(blocksOf).filter((b) => /^(sh|bash)\b/.test(b.info))) {
      const checked = await bash(['-n'], { input: block.code });
      assert.equal(checked.code, 0, `${block.page}:${block.line}: ${checked.output}`);
      assert.ok(!block.code.includes('·') && !block.code.includes('…'), `${block.page}:${block.line} holds a placeholder or a joined line: mark it text`);
    }
  });

  describe("the README's sh blocks, run as pasted", () => {
    let daemon: DaemonHandle;
    let dir: string;

    before(async () => {
      daemon = await startDaemon();
      dir = await mkdtemp(join(tmpdir(), 'convd-readme-'));
    });

    after(async () => {
      await daemon?.dispose();
      if (dir) await rm(dir, { recursive: true, force: true });
    });

    it('each runs, in a directory holding the files it names, conv on PATH', async () => {
      const blocks = blocksOf('README.md').filter((block) => block.info === 'sh');
      assert.ok(blocks.length >= 2, 'the quick start has runnable blocks');
      for (const [index, block] of blocks.entries()) {
        const cwd = join(dir, String(index));
        await rm(cwd, { recursive: true, force: true });
        await import('node:fs/promises').then((fs) => fs.mkdir(cwd, { recursive: true }));
        await writeFile(join(cwd, 'photo.png'), await sharp({ create: { width: 64, height: 48, channels: 3, background: '#3366cc' } }).png().toBuffer());
        const env = {
          PATH: `${join(ROOT, 'bin')}:${process.env.PATH}`,
          HOME: cwd,
          XDG_CONFIG_HOME: join(cwd, '.config'),
          XDG_CACHE_HOME: join(cwd, '.cache'),
          CONV_BASE_URL: daemon.baseUrl,
          CONV_API_KEY: daemon.apiKey,
        };
        const ran = await bash(['-euo', 'pipefail'], { cwd, env, input: block.code });
        assert.equal(ran.code, 0, `README.md:${block.line} failed:\n${block.code}\n---\n${ran.output}`);
      }
    });
  });
});
