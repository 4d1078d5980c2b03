/**
 * What bench/page-count.ts prints: a line per file, and the summary (the share that agrees, per
 * first-level subfolder too, the fonts the PDFs embed and those the daemon said it substituted,
 * what was not measured).
 */
import type { WordPages } from './word-pages.ts';

export interface Measured {
  path: string;
  wordPages: number;
  application: string;
  words: { word: number | null; counted: number };
  pdfPages: number | null;
  agree: boolean;
  fonts: string[];
  /** What the daemon said it set in another font than the document names: "Segoe UI -> DejaVu Sans". */
  substituted: string[];
  error?: string;
}

export interface Skipped {
  path: string;
  kind: Exclude<WordPages['kind'], 'word'> | 'duplicate';
  reason: string;
}

export function fileLine(result: Measured): string {
  if (result.error !== undefined) return `FAILED  Word ${result.wordPages}  ${result.path}: ${result.error}`;
  const substituted = result.substituted.length > 0 ? `  (substituted: ${result.substituted.join(', ')})` : '';
  return `${result.agree ? 'agree ' : 'DIFFER'}  Word ${result.wordPages}  PDF ${result.pdfPages}  ${result.path}${substituted}`;
}

const percent = (part: number, whole: number) => (whole === 0 ? 0 : Math.round((1000 * part) / whole) / 10);

function figure(results: Measured[]) {
  const agree = results.filter((result) => result.agree).length;
  return { agree, measured: results.length, share: percent(agree, results.length), failed: results.filter((result) => result.error !== undefined).length };
}

function countBy<T>(items: T[], key: (item: T) => string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const item of items) for (const name of key(item)) counts[name] = (counts[name] ?? 0) + 1;
  return Object.fromEntries(Object.entries(counts).sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])));
}

export function report(results: Measured[], skipped: Skipped[]) {
  const folders = [...new Set(results.filter((result) => result.path.includes('/')).map((result) => result.path.split('/')[0]!))].sort();
  return {
    ...figure(results),
    byFolder: Object.fromEntries(folders.map((folder) => [folder, figure(results.filter((result) => result.path.startsWith(`${folder}/`)))])),
    fonts: countBy(results, (result) => result.fonts),
    substituted: countBy(results, (result) => result.substituted),
    skipped: countBy(skipped, (item) => [item.kind]),
  };
}

export function summaryText(results: Measured[], skipped: Skipped[], summary: ReturnType<typeof report>): string {
  const lines = [
    '',
    `${summary.agree} of ${summary.measured} agree (${summary.share} %)${summary.failed ? `; ${summary.failed} failed to convert` : ''}`,
    ...Object.entries(summary.byFolder).map(([folder, f]) => `  ${folder}: ${f.agree} of ${f.measured} (${f.share} %)${f.failed ? `, ${f.failed} failed` : ''}`),
    `not measured: ${Object.entries(summary.skipped).map(([kind, count]) => `${count} ${kind}`).join(', ') || 'none'}`,
    ...Object.entries(countBy(skipped.filter((item) => item.kind === 'not-word'), (item) => [item.reason])).map(([reason, count]) => `  not-word: ${count} ${reason}`),
    `fonts in the PDFs (files): ${Object.entries(summary.fonts).map(([font, count]) => `${font} ${count}`).join(', ')}`,
    `fonts substituted (files): ${Object.entries(summary.substituted).map(([font, count]) => `${font} ${count}`).join(', ') || 'none'}`,
  ];
  const differing = results.filter((result) => !result.agree);
  if (differing.length > 0) lines.push('not agreeing:', ...differing.map((result) => `  ${fileLine(result)}`));
  return `${lines.join('\n')}\n`;
}
