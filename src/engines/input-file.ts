import { rm, writeFile } from 'node:fs/promises';
import type { EngineJob } from './types.ts';

/**
 * Runs `work` on the job with its input as a file. Where the input came as bytes
 * (EngineJob.inputBytes), they are written at `inputPath` for the length of the work (an engine
 * host reads files, and a Buffer does not cross to it) and removed after; the job `work` gets
 * carries no bytes.
 */
export async function withInputFile<T>(job: EngineJob, work: (job: EngineJob) => Promise<T>): Promise<T> {
  if (!job.inputBytes) return work(job);
  const { inputBytes, ...onDisk } = job;
  // `wx`: the path is the run's own (BlobStore.outputPathFor); nothing of another run is overwritten.
  await writeFile(job.inputPath, inputBytes, { mode: 0o600, flag: 'wx' });
  try {
    return await work(onDisk);
  } finally {
    await rm(job.inputPath, { force: true });
  }
}

