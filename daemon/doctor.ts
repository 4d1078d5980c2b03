import { defaultEngines, ENGINES } from '../src/engines/catalog.ts';
import { CHAIN_ENGINE } from '../src/engines/chain.ts';
import { engineSettings } from '../src/engines/configuration.ts';
import { EngineHost } from '../src/engines/host/engine-host.ts';
import { systemFonts, type SystemFonts } from '../src/engines/fonts/system-fonts.ts';
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
  /** The fonts LibreOffice and Chromium find: scripts, Word's fonts' stand-ins, emoji, hyphenation. */
  fonts: SystemFonts;
  /**
   * What an engine's doctor found, under its key (its descriptor's `doctor`): the office engine's
   * `formulas`, whether LibreOffice's Math module is there, without which formulas are lost.
   */
  [finding: string]: unknown;
}

/** `convd doctor`: each engine, the binary it found, its version and whether it can run. */
export async function doctor(): Promise<DoctorReport> {
  const config = defaultServiceConfig();
  // A host that is never started: it tells where the isolated engines run.
  const host = new EngineHost({ processes: 1, memoryLimitMb: config.engineMemoryMb });
  const engines = defaultEngines(engineSettings(config), undefined, host);
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
    ...(await engineFindings(registry.statuses, pairs)),
    fonts: await systemFonts(),
  };
}

/** What the engines' doctors found, each under its key; nothing of an engine with nothing to say. */
async function engineFindings(statuses: readonly EngineStatus[], pairs: readonly ConversionPair[]): Promise<Record<string, unknown>> {
  const findings: Record<string, unknown> = {};
  for (const engine of ENGINES) {
    const found = await engine.doctor?.find(statuses, pairs);
    if (engine.doctor && found !== undefined) findings[engine.doctor.key] = found;
  }
  return findings;
}

/** The line each engine's doctor prints of what it found. */
function findingLines(report: DoctorReport): string[] {
  return ENGINES.flatMap((engine) => (engine.doctor && report[engine.doctor.key] !== undefined ? [engine.doctor.line(report[engine.doctor.key])] : []));
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
  return [...lines, `${report.pairs} conversion pairs offered${chains}`, ...findingLines(report), ...fontLines(report.fonts), allocator].join('\n');
}
