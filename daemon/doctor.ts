import { defaultEngines } from '../src/engines/catalog.ts';
import { CHAIN_ENGINE } from '../src/engines/chain.ts';
import { EngineHost } from '../src/engines/host/engine-host.ts';
import type { EngineStatus } from '../src/engines/types.ts';
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
}

/** `convd doctor`: each engine, the binary it found, its version and whether it can run. */
export async function doctor(): Promise<DoctorReport> {
  const config = defaultServiceConfig();
  // A host that is never started: it tells where the isolated engines run.
  const host = new EngineHost({ processes: 1, memoryLimitMb: config.engineMemoryMb });
  const engines = defaultEngines({ maxInputPixels: config.maxInputPixels, processMemoryMb: config.engineMemoryMb, inputCaps: config.inputCaps, office: config.office, html: config.html }, undefined, host);
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
  };
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
  return [...lines, `${report.pairs} conversion pairs offered${chains}`, allocator].join('\n');
}
