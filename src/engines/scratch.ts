/**
 * The one directory an engine may make beside its output for work of its own (a multi-page
 * render's pages, a HEIC's decoded picture): removed by the engine when it ends, and by the
 * runner after a run that failed (an engine host killed at a time limit cannot remove it), also
 * where the output has no run directory around it (Engine.readsAnyNameOf).
 */
export function scratchDirFor(outputPath: string): string {
  return `${outputPath}.scratch`;
}
