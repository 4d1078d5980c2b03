import { createImageEngine } from './image/sharp-engine.ts';
import type { Engine } from './types.ts';

export interface EngineSettings {
  maxInputPixels: number;
}

/** Every engine the service offers, in order of preference when two declare the same pair. */
export function defaultEngines(settings: EngineSettings): Engine[] {
  return [createImageEngine({ maxInputPixels: settings.maxInputPixels })];
}
