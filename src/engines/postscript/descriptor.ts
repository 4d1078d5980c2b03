import { defineEngine } from '../descriptor.ts';

export interface PostscriptSettings {
  /**
   * A Ghostscript run whose PDF does not grow for this much of its processor time ends early with
   * `timeout`, ms (0: only the time limit). A document's page (what drivers and drawing programs
   * write) is drawn in well under a second, and what goes 20 s without a page done or a buffer of
   * drawing written is a program computing or looping rather than drawing.
   */
  stallMs: number;
}

/** Ghostscript for EPS, PostScript and Illustrator files (to PDF, then on through the PDF engines). */
export const postscript = defineEngine<PostscriptSettings>({
  name: 'postscript',
  defaults: () => ({ stallMs: 20_000 }),
  settings: [
    { key: 'postscript_stall_timeout', field: 'stallMs', kind: { type: 'duration', unit: 's' }, arg: 'duration', listedAt: 14, help: 'a Ghostscript run whose PDF does not grow for this much of its processor time ends early with timeout, before the time limit (0: off)' },
  ],
  limits: { timeLimitMs: 120_000, listedAt: 9 },
  loader: (settings, own) => ({
    load: async () => (await import('./ghostscript-engine.ts')).createGhostscriptEngine({ processMemoryMb: settings.processMemoryMb, stallMs: own?.stallMs }),
  }),
  binaries: [{ name: 'gs', env: 'CONVD_GHOSTSCRIPT_PATH' }],
});
