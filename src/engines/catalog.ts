import { createDataEngine } from './data/data-engine.ts';
import { createImageEngine } from './image/sharp-engine.ts';
import { createMediaEngine } from './media/media-engine.ts';
import { createPdfEngine } from './pdf/pdf-engine.ts';
import type { Engine } from './types.ts';

export interface EngineSettings {
  maxInputPixels: number;
}

/**
 * Every engine the service offers, in order of preference when two declare the same pair
 * (jpg/png targets exist in both the image engine and the media engine's still frames, but for
 * different sources, so no pair is actually shared today).
 */
export function defaultEngines(settings: EngineSettings): Engine[] {
  return [
    createImageEngine({ maxInputPixels: settings.maxInputPixels }),
    createMediaEngine(),
    createPdfEngine({ maxInputPixels: settings.maxInputPixels }),
    createDataEngine(),
  ];
}
