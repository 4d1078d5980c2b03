import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * The characters the system's fonts can draw, as fontconfig reports them (`fc-list`, the list
 * Chromium and LibreOffice choose their fallback fonts from): merged ranges of code points.
 */
export interface FontCoverage {
  /** Whether some installed font has a glyph for the code point. */
  covers(codePoint: number): boolean;
  /** How many fonts fontconfig lists (0 where it is missing). */
  fonts: number;
}

/** Code points no font needs to draw: they steer the text (joiners, marks of direction, variation selectors, tags). */
const IGNORABLE = /[\u00AD\u034F\u061C\u115F\u1160\u17B4\u17B5\u180B-\u180F\u200B-\u200F\u202A-\u202E\u2060-\u206F\u3164\uFE00-\uFE0F\uFEFF\uFFA0\uFFF0-\uFFFB]|[\u{E0000}-\u{E0FFF}]/u;

let loaded: Promise<FontCoverage> | undefined;

/** Read once per process: fontconfig's own cache answers in milliseconds, fonts change only with packages. */
export function fontCoverage(): Promise<FontCoverage> {
  loaded ??= readCoverage();
  return loaded;
}

async function readCoverage(): Promise<FontCoverage> {
  const listed = await run('fc-list', ['--format', '%{charset}\\n'], { maxBuffer: 64 * 1024 * 1024, timeout: 30_000 })
    .then(({ stdout }) => stdout, () => '');
  const lines = listed.split('\n').filter((line) => line.trim() !== '');
  const ranges = mergedRanges(lines.flatMap((line) => line.trim().split(/\s+/).map(parseRange)));
  return { covers: (codePoint) => inRanges(ranges, codePoint) || IGNORABLE.test(String.fromCodePoint(codePoint)), fonts: lines.length };
}

function parseRange(text: string): [number, number] {
  const [low, high = low] = text.split('-');
  return [Number.parseInt(low!, 16), Number.parseInt(high, 16)];
}

function mergedRanges(ranges: [number, number][]): [number, number][] {
  const sorted = ranges.filter(([low, high]) => Number.isFinite(low) && Number.isFinite(high)).sort((a, b) => a[0] - b[0]);
  const merged: [number, number][] = [];
  for (const [low, high] of sorted) {
    const last = merged.at(-1);
    if (last && low <= last[1] + 1) last[1] = Math.max(last[1], high);
    else merged.push([low, high]);
  }
  return merged;
}

function inRanges(ranges: readonly [number, number][], codePoint: number): boolean {
  let low = 0;
  let high = ranges.length - 1;
  while (low <= high) {
    const middle = (low + high) >> 1;
    const [start, end] = ranges[middle]!;
    if (codePoint < start) high = middle - 1;
    else if (codePoint > end) low = middle + 1;
    else return true;
  }
  return false;
}
