import { readFile } from 'node:fs/promises';
import { basename, resolve, sep } from 'node:path';

/**
 * The file system a path is on, as a bench note: its type, and for ext4 whether it has a journal.
 * An ext4 without one (as on the development box) searches past every recently freed inode when
 * it creates a file (`find_inode_bit` -> `recently_deleted`), which a journalled one skips: each
 * file a conversion creates costs several times the CPU there (docs/benchmarks.md).
 */
export async function describeFileSystem(path: string): Promise<string> {
  let mounts: string;
  try {
    mounts = await readFile('/proc/self/mountinfo', 'utf8');
  } catch {
    return 'unknown (no /proc/self/mountinfo)';
  }
  const target = resolve(path);
  let best: { point: string; type: string; source: string } | null = null;
  for (const line of mounts.split('\n')) {
    // `id parent major:minor root mount-point options ... - type source super-options`
    const [left, right] = line.split(' - ');
    if (!left || !right) continue;
    const point = unescapeMount(left.split(' ')[4] ?? '');
    const [type = '', source = ''] = right.split(' ');
    const inside = target === point || target.startsWith(point.endsWith(sep) ? point : point + sep);
    if (inside && (!best || point.length >= best.point.length)) best = { point, type, source };
  }
  if (!best) return 'unknown';
  if (best.type !== 'ext4') return `${best.type} (${best.source} on ${best.point})`;
  const journal = await readFile(`/sys/fs/ext4/${basename(best.source)}/journal_task`, 'utf8').then((text) => text.trim(), () => null);
  const kind = journal === null ? 'ext4' : journal === '<none>' ? 'ext4 without a journal' : 'ext4 with a journal';
  return `${kind} (${best.source} on ${best.point})`;
}

/** mountinfo writes a space, tab, newline and backslash in a path as octal escapes. */
function unescapeMount(text: string): string {
  return text.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8)));
}
