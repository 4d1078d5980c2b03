/**
 * The stored entries of a bundle read from memory (src/inputs/stored-zip.ts): slices of the zip,
 * checked against their CRC-32; a compressed, damaged or missing entry is an error, never wrong bytes.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ZipFile } from 'yazl';
import { storedEntries } from '../../src/inputs/stored-zip.ts';

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
});
