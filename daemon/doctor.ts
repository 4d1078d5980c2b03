import { defaultEngines } from '../src/engines/catalog.ts';
import { CHAIN_ENGINE } from '../src/engines/chain.ts';
import { EngineHost } from '../src/engines/host/engine-host.ts';
import { systemFonts, type SystemFonts } from '../src/engines/fonts/system-fonts.ts';
import { MATH_PACKAGE, officeMath } from '../src/engines/office/find-office.ts';
import type { EngineStatus } from '../src/engines/types.ts';
import type { ConversionPair } from '../src/engines/pairs.ts';
import { FormatRegistry } from '../src/formats/registry.ts';
import { defaultServiceConfig } from '../src/service/config.ts';
import { memoryAllocator, type Allocator } from './ops/allocator.ts';

export interface DoctorReport {
  engines: (EngineStatus & { pairs: number })[];
  pairs: number;
  /** Of the pairs, those two engines make together, and the first of them as an example. */
  chains: number;
  chainExample?: string;
  /** The malloc of this process: the daemon's when run with the same environment (LD_PRELOAD). */
  allocator: Allocator;
  /** Where LibreOffice runs: whether its Math module is there, without which formulas are lost. */
  formulas?: FormulaSupport;
  /** The fonts LibreOffice and Chromium find: scripts, Word's fonts' stand-ins, emoji, hyphenation. */
  fonts: SystemFonts;
}

export interface FormulaSupport {
  /** The file of LibreOffice Math found beside soffice, or null when it is not installed. */
  math: string | null;
  /** The pairs LibreOffice writes (the office engine's, and chains with a step on it). */
  pairs: number;
  /** Of them, the chains from pandoc's sources through its docx (`latex -> pdf`). */
  chains: string[];
}

/** `convd doctor`: each engine, the binary it found, its version and whether it can run. */
export async function doctor(): Promise<DoctorReport> {
  const config = defaultServiceConfig();
  // A host that is never started: it tells where the isolated engines run.
  const host = new EngineHost({ processes: 1, memoryLimitMb: config.engineMemoryMb });
  const engines = defaultEngines({ maxInputPixels: config.maxInputPixels, processMemoryMb: config.engineMemoryMb, inputCaps: config.inputCaps, office: config.office, stallMs: config.stallMs, html: config.html }, undefined, host);
  const registry = await FormatRegistry.create(engines, config.creditWeights);
  await registry.close();
  const pairs = registry.allPairs();
  const chains = pairs.filter((pair) => pair.engine === CHAIN_ENGINE);
  const first = chains.find((pair) => pair.source === 'md' && pair.target === 'pdf') ?? chains[0];
  const example = first?.steps ? [first.source, ...first.steps.map((step) => step.target)].join(' -> ') : undefined;
  return {
    engines: registry.statuses.map((status) => ({
      ...status,
      pairs: pairs.filter((pair) => pair.engine === status.name).length,
    })),
    pairs: pairs.length,
    chains: chains.length,
    ...(example ? { chainExample: example } : {}),
    allocator: memoryAllocator(),
    ...(await formulaSupport(registry.statuses, pairs)),
    fonts: await systemFonts(),
  };
}

/**
 * Whether LibreOffice can keep formulas (its Math module, Debian's libreoffice-math-nogui): without
 * it LibreOffice drops every formula of a document it writes, silently, pandoc's (LaTeX, Org, rst,
 * Markdown math in the docx it hands on) as much as a Word or OpenDocument file's own.
 */
export async function formulaSupport(statuses: readonly EngineStatus[], pairs: readonly ConversionPair[]): Promise<{ formulas?: FormulaSupport }> {
  const office = statuses.find((status) => status.name === 'office');
  if (!office?.available || !office.binary) return {};
  const written = pairs.filter((pair) => pair.engine === 'office' || pair.steps?.some((step) => step.engine === 'office'));
  const chains = written.filter((pair) => pair.steps?.[0]?.engine === 'markup').map((pair) => `${pair.source} -> ${pair.target}`);
  return { formulas: { math: (await officeMath(office.binary)) ?? null, pairs: written.length, chains } };
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

function formulaLine(formulas: FormulaSupport): string {
  if (formulas.math) return `formulas: LibreOffice Math found (${formulas.math}): formulas are kept in the ${formulas.pairs} pairs LibreOffice writes`;
  const chains = formulas.chains.length > 0 ? `, and the math pandoc puts in the docx of ${groupedChains(formulas.chains)}` : '';
  return `formulas: LOST: LibreOffice Math is not installed: the ${formulas.pairs} pairs LibreOffice writes drop every formula (a Word, OpenDocument or RTF document's own${chains}): install Debian's ${MATH_PACKAGE}`;
}

/** Lines that say what documents will look like: the scripts drawn, Word's fonts, emoji, hyphenation. */
export function fontLines(fonts: SystemFonts): string[] {
  if (fonts.fonts === 0) return ['fonts: NONE FOUND: fontconfig (fc-list) is missing or lists no font: documents and HTML print without text'];
  const packages = (missing: { package: string }[]) => [...new Set(missing.map((entry) => entry.package))].join(' ');
  const scripts = fonts.missing.length === 0
    ? `fonts: ${fonts.fonts} fonts; every script checked is drawn: ${fonts.covered.join(', ')}`
    : `fonts: ${fonts.fonts} fonts; drawn: ${fonts.covered.join(', ')}; NOT DRAWN (empty boxes or refused): ${fonts.missing.map((entry) => entry.script).join(', ')}: install ${packages(fonts.missing)}`;
  const wrong = fonts.standIns.filter((entry) => !entry.compatible);
  const standIns = `Word's fonts: ${fonts.standIns.map((entry) => `${entry.font} -> ${entry.used}`).join(', ')}`
    + (wrong.length === 0 ? ' (metric-compatible: lines and pages break as in Word)' : `; NOT METRIC-COMPATIBLE: ${wrong.map((entry) => entry.font).join(', ')}: lines and pages break elsewhere than in Word: install ${packages(wrong)}`);
  const emoji = [
    fonts.colourEmoji ? 'emoji: in colour (Chromium)' : 'emoji: NO COLOUR FONT: Chromium prints emoji as outlines or boxes: install fonts-noto-color-emoji',
    fonts.outlineEmoji ? 'as outlines (LibreOffice)' : 'NO OUTLINE FONT: LibreOffice prints emoji as nothing: install fonts-symbola',
  ].join('; ');
  const hyphenation = fonts.hyphenation.length > 0
    ? `hyphenation (LibreOffice): ${fonts.hyphenation.join(', ')}`
    : 'hyphenation (LibreOffice): none: hyphenated documents break lines without hyphens: install hyphen-en-us, hyphen-de, ...';
  return [scripts, standIns, emoji, hyphenation];
}

export function formatDoctor(report: DoctorReport): string {
  const nameWidth = Math.max(6, ...report.engines.map((engine) => engine.name.length));
  const lines = report.engines.map((engine) => {
    const state = engine.available ? 'ok         ' : 'UNAVAILABLE';
    const detail = engine.detail ? `  (${engine.detail})` : '';
    return `${state}  ${engine.name.padEnd(nameWidth)}  ${String(engine.pairs).padStart(3)} pairs  ${engine.binary ?? '-'}  ${engine.version ?? ''}${detail}`;
  });
  const chains = report.chains > 0 ? ` (${report.chains} of them through two engines, e.g. ${report.chainExample})` : '';
  const allocator = report.allocator === 'glibc'
    ? "memory allocator: glibc's malloc (a daemon on it keeps hundreds of MB after large images: preload jemalloc as deploy/convd.service does)"
    : `memory allocator: ${report.allocator}`;
  return [...lines, `${report.pairs} conversion pairs offered${chains}`, ...(report.formulas ? [formulaLine(report.formulas)] : []), ...fontLines(report.fonts), allocator].join('\n');
}
