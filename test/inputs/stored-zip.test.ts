/**
 * The stored entries of a bundle read from memory (src/inputs/stored-zip.ts): slices of the zip,
 * checked against their CRC-32; a compressed, damaged or missing entry is an error, never wrong bytes.
 * And the zips built in memory (storedZip), read back by Python's zipfile (its own reader, which
 * checks every CRC-32) and by yauzl.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';
import { ZipFile } from 'yazl';
import { openZipBuffer, storedEntries, storedZip } from '../../src/inputs/stored-zip.ts';
import { nextEntry } from '../../src/inputs/zip-entries.ts';

/** What Python's zipfile reads of a zip: testzip() (every CRC-32), then each entry's name, size, date and bytes (hex). */
const PYTHON_READ = `
import json, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    print(json.dumps({"bad": z.testzip(), "entries": [
        {"name": i.filename, "size": i.file_size, "stored": i.compress_type == zipfile.ZIP_STORED, "year": i.date_time[0], "hex": z.read(i).hex()}
        for i in z.infolist()]}))
`;

interface PythonEntry {
  name: string;
  size: number;
  stored: boolean;
  year: number;
  hex: string;
}

async function zipOf(entries: { name: string; data: Buffer; compress?: boolean }[]): Promise<Buffer> {
  const zip = new ZipFile();
  for (const entry of entries) zip.addBuffer(entry.data, entry.name, { compress: entry.compress === true });
  zip.end();
  const chunks: Buffer[] = [];
  for await (const chunk of zip.outputStream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

describe('stored zip entries', () => {
  const one = Buffer.from('%PDF-1.7 first file\n'.repeat(20));
  const two = Buffer.from('%PDF-1.7 second file\n'.repeat(30));

  it('gives each named entry\'s bytes as written, whatever the order asked', async () => {
    const entries = await storedEntries(await zipOf([{ name: '1.pdf', data: one }, { name: '2.pdf', data: two }, { name: 'watermark_image.png', data: Buffer.from('png') }]), ['2.pdf', '1.pdf']);
    assert.deepEqual([...entries.keys()].sort(), ['1.pdf', '2.pdf']);
    assert.deepEqual(entries.get('1.pdf'), one);
    assert.deepEqual(entries.get('2.pdf'), two);
  });

  it('a damaged entry, a compressed one and a missing one are errors', async () => {
    const zip = await zipOf([{ name: '1.pdf', data: one }]);
    const damaged = Buffer.from(zip);
    damaged[damaged.indexOf('first file') + 2] ^= 0xff;
    await assert.rejects(storedEntries(damaged, ['1.pdf']), /damaged \(CRC-32\)/);
    await assert.rejects(storedEntries(await zipOf([{ name: '1.pdf', data: one, compress: true }]), ['1.pdf']), /not stored/);
    await assert.rejects(storedEntries(zip, ['1.pdf', '2.pdf']), /2\.pdf is missing/);
  });

  it('a zip built in memory reads back whole in Python\'s zipfile and in yauzl: names (UTF-8), bytes, order, date', async () => {
    const files = [
      { name: '1.pdf', data: one },
      { name: 'pages/page-02.png', data: Buffer.from(Array.from({ length: 3000 }, (_, index) => index % 251)) },
      { name: 'résumé – 履歴書.txt', data: Buffer.from('text in the zip\n') },
      { name: 'empty.txt', data: Buffer.alloc(0) },
    ];
    const zip = storedZip(files, new Date(2026, 11, 2, 10, 30, 14));
    const dir = await mkdtemp(join(tmpdir(), 'stored-zip-'));
    try {
      const path = join(dir, 'built.zip');
      await writeFile(path, zip);
      const { stdout } = await promisify(execFile)('/usr/bin/python3', ['-c', PYTHON_READ, path]);
      const read = JSON.parse(stdout) as { bad: string | null; entries: PythonEntry[] };
      assert.equal(read.bad, null, 'a CRC-32 that does not match');
      assert.deepEqual(read.entries.map((entry) => entry.name), files.map((file) => file.name));
      for (const [index, entry] of read.entries.entries()) {
        assert.equal(entry.hex, files[index]!.data.toString('hex'), entry.name);
        assert.equal(entry.size, files[index]!.data.length);
        assert.ok(entry.stored);
        assert.equal(entry.year, 2026);
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    const names: string[] = [];
    const file = await openZipBuffer(zip);
    for (let entry = await nextEntry(file); entry; entry = await nextEntry(file)) names.push(entry.fileName);
    file.close();
    assert.deepEqual(names, files.map((one) => one.name));
    const back = await storedEntries(zip, files.map((one) => one.name));
    for (const one of files) assert.deepEqual(back.get(one.name), one.data);
  });

  it('refuses a name that is a path out of the archive', () => {
    for (const name of ['/etc/passwd', '../up.txt', 'a/../../b', 'back\\slash', '']) {
      assert.throws(() => storedZip([{ name, data: one }]), /not a zip entry name/, name);
    }
  });
});
