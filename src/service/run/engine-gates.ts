import type { Engine } from '../../engines/types.ts';
import { ConcurrencyGate } from '../../queue/concurrency-gate.ts';

/**
 * A gate per engine that limits its own runs (`maxConcurrentRuns`): taken before the time limit
 * starts, so waiting for it is free. `quickRuns`: the runs each such engine takes beyond its
 * number for the workers' quick lane (its gate keeps them for quick jobs).
 */
export class EngineGates {
  private readonly gates = new Map<string, ConcurrencyGate>();

  constructor(private readonly quickRuns: number) {}

  /** The engine's gate, made at its first run; null for an engine without a limit of its own. */
  of(engine: Engine): ConcurrencyGate | null {
    if (engine.maxConcurrentRuns === undefined) return null;
    let gate = this.gates.get(engine.name);
    if (!gate) this.gates.set(engine.name, (gate = new ConcurrencyGate(engine.maxConcurrentRuns, this.quickRuns)));
    return gate;
  }
}
