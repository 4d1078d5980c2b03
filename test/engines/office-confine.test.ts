/**
 * The office engine's confinement (src/engines/office/confine.py): which directories LibreOffice
 * may read and write. The root directory is never among those derived from the installation and
 * the environment, which would open every file (only the operator's CONVD_OFFICE_READABLE may name
 * it). Run by the system's Python: confine.py needs nothing but its standard library.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, it } from 'node:test';

const OFFICE_DIR = fileURLToPath(new URL('../../src/engines/office/', import.meta.url));

/** readable_roots and writable_roots as confine.py computes them, for this soffice and environment. */
async function roots(soffice: string, env: Record<string, string>, writable: string[] = []): Promise<{ readable: string[]; writable: string[] }> {
  const script = `import json, sys; sys.path.insert(0, ${JSON.stringify(OFFICE_DIR)}); import confine
print(json.dumps({"readable": confine.readable_roots(${JSON.stringify(soffice)}), "writable": confine.writable_roots(${JSON.stringify(writable)})}))`;
  const { stdout } = await promisify(execFile)('python3', ['-c', script], { env: { PATH: process.env.PATH ?? '', ...env } });
  return JSON.parse(stdout) as { readable: string[]; writable: string[] };
}

describe('the office confinement\'s directories', () => {
  it('a LibreOffice in /bin, a fontconfig file at /, a profile at / give no root directory', async () => {
    const found = await roots('/bin/soffice.bin', { HOME: '/', FONTCONFIG_FILE: '/fonts.conf', TMPDIR: '/tmp' }, ['/']);
    assert.ok(!found.readable.includes('/'), found.readable.join(' '));
    assert.ok(!found.writable.includes('/'), found.writable.join(' '));
    assert.ok(found.readable.includes('/usr') && found.writable.includes('/tmp'));
  });

  it('an installation elsewhere and the fontconfig file\'s directory are read; the home only for its fonts', async () => {
    const found = await roots('/opt/libreoffice/program/soffice.bin', { HOME: '/home/convd', FONTCONFIG_FILE: '/srv/conf/fonts.conf' });
    for (const dir of ['/opt/libreoffice', '/srv/conf', '/home/convd/.fonts', '/home/convd/.local/share/fonts']) assert.ok(found.readable.includes(dir), dir);
    assert.ok(!found.readable.includes('/home/convd'));
  });
});
