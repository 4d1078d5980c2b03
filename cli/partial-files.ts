import { unlinkSync } from 'node:fs';

/**
 * Temporary files being written (downloads before their rename), removed by the signal handler
 * if the process is interrupted. Apart from save.ts, so that main.ts can clean up without
 * loading the download code (and node:crypto) at every start.
 */
const partialFiles = new Set<string>();

export function trackPartialFile(path: string): () => void {
  partialFiles.add(path);
  return () => void partialFiles.delete(path);
}

/** For a signal handler: a Ctrl-C during a download must not leave a `.part` file behind. */
export function removePartialFilesSync(): void {
  for (const path of partialFiles) {
    try {
      unlinkSync(path);
    } catch {
      // Already gone.
    }
  }
  partialFiles.clear();
}
