import type { ConversionErrorCode } from '../../errors/codes.ts';
import type { EngineJob, EngineSettings } from '../types.ts';

/** What crosses to the engine host for one conversion: the job without its signal and callback. */
export type HostJob = Omit<EngineJob, 'signal' | 'onProgress'>;

export interface HostRequest {
  /** An engine of the catalog (engines/catalog.ts) by name: the host loads nothing else. */
  engine: string;
  settings: EngineSettings;
  job: HostJob;
}

/** Sent while a job runs. */
export interface HostProgress {
  progress: number;
}

/** The answer of a job that ended well: what the engine told of its output. */
export interface HostDone {
  size?: number;
}

/** How a job failed: a failure of the input or the conversion (its code stands), or a bug. */
export type HostFailure =
  | { kind: 'conversion'; code: ConversionErrorCode; message: string; details?: Record<string, number | string> }
  | { kind: 'hand_over'; message: string; kept?: { size: number } }
  | { kind: 'internal'; message: string };
