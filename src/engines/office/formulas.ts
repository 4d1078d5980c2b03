import type { EngineDoctor } from '../descriptor.ts';
import type { ConversionPair } from '../pairs.ts';
import type { EngineStatus } from '../types.ts';

/** The package of LibreOffice Math in Debian. */
export const MATH_PACKAGE = 'libreoffice-math-nogui';

export interface FormulaSupport {
  /** The file of LibreOffice Math found beside soffice, or null when it is not installed. */
  math: string | null;
  /** The pairs LibreOffice writes (the office engine's, and chains with a step on it). */
  pairs: number;
  /** Of them, the chains from pandoc's sources through its docx (`latex -> pdf`). */
  chains: string[];
}

/**
 * Whether LibreOffice can keep formulas (its Math module, Debian's libreoffice-math-nogui): without
 * it LibreOffice drops every formula of a document it writes, silently, pandoc's (LaTeX, Org, rst,
 * Markdown math in the docx it hands on) as much as a Word or OpenDocument file's own. Undefined
 * where LibreOffice does not run.
 */
export async function formulaSupport(statuses: readonly EngineStatus[], pairs: readonly ConversionPair[]): Promise<FormulaSupport | undefined> {
  const office = statuses.find((status) => status.name === 'office');
  if (!office?.available || !office.binary) return undefined;
  const written = pairs.filter((pair) => pair.engine === 'office' || pair.steps?.some((step) => step.engine === 'office'));
  const chains = written.filter((pair) => pair.steps?.[0]?.engine === 'markup').map((pair) => `${pair.source} -> ${pair.target}`);
  // Loaded here, not with this module: every process that converts loads the engines' descriptors.
  const { officeMath } = await import('./find-office.ts');
  return { math: (await officeMath(office.binary)) ?? null, pairs: written.length, chains };
}

/** `latex -> pdf`, `latex -> rtf`, `org -> pdf` as `latex, org -> pdf; latex -> rtf`. */
function groupedChains(chains: readonly string[]): string {
  const byTarget = new Map<string, string[]>();
  for (const chain of chains) {
    const [source, target] = chain.split(' -> ') as [string, string];
    byTarget.set(target, [...(byTarget.get(target) ?? []), source]);
  }
  return [...byTarget].map(([target, sources]) => `${sources.join(', ')} -> ${target}`).join('; ');
}

export function formulaLine(formulas: FormulaSupport): string {
  if (formulas.math) return `formulas: LibreOffice Math found (${formulas.math}): formulas are kept in the ${formulas.pairs} pairs LibreOffice writes`;
  const chains = formulas.chains.length > 0 ? `, and the math pandoc puts in the docx of ${groupedChains(formulas.chains)}` : '';
  return `formulas: LOST: LibreOffice Math is not installed: the ${formulas.pairs} pairs LibreOffice writes drop every formula (a Word, OpenDocument or RTF document's own${chains}): install Debian's ${MATH_PACKAGE}`;
}

/** `convd doctor`'s line on formulas, under `formulas` in its JSON. */
export const formulasDoctor: EngineDoctor<FormulaSupport> = { key: 'formulas', find: formulaSupport, line: formulaLine };
