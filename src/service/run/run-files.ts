import { rm } from 'node:fs/promises';
import { scratchDirFor } from '../../engines/scratch.ts';
import type { ConversionRecord } from '../../model/conversion.ts';
import type { BlobStore, LocalFile } from '../../store/blob-store.ts';
import { engineInputName, prepareJobFiles, safeExtension, type JobFiles, type RunDirs } from '../job-dir.ts';

/** Where a run's engine reads and writes (EngineJob's fields of the same names). */
export type PreparedFiles = Pick<JobFiles, 'inputPath' | 'outputPath'> & { inputName?: string; inputBytes?: Buffer };

/**
 * What one run keeps on disk: a local copy of the input, the run's own directory (the input under
 * the user's file name, the output, what engines add), and the output while it is not the
 * conversion's result (yet). All of it goes when the run ends, whichever way.
 */
export class RunFiles {
  /** The paths the engine was given, with the words its messages show instead. */
  known: Record<string, string> = {};
  private input: LocalFile | null = null;
  private jobDir: string | null = null;
  /** What prepare() made in the run's directory, once it has. */
  private jobFiles: JobFiles | undefined;
  /** The output of this run while it is not the conversion's result: removed on any failure. */
  private pendingOutput: string | null = null;

  constructor(private readonly blobs: BlobStore, private readonly dirs: RunDirs, private readonly id: string) {}

  /**
   * The run's directory with the input in it, and where the engine writes the output. `anyName`:
   * the engine reads this source whatever the file is called (Engine.readsAnyNameOf): it is given the
   * stored input itself and an output path of the store's, and no directory is made, linked
   * into and emptied again (four hops to the thread pool of a small image's few dozen). `bytes`:
   * it also reads an input kept in the record (`input_bytes`) as bytes: then no file at all.
   */
  async prepare(record: ConversionRecord, sourceExtension: string, targetExtension: string, how: { anyName: boolean; bytes: boolean }): Promise<PreparedFiles> {
    if (record.input_bytes !== undefined) return this.prepareFromRecord(record, Buffer.from(record.input_bytes, 'base64'), sourceExtension, targetExtension, how.bytes);
    this.input = await this.blobs.localInput(this.id);
    if (how.anyName) return this.withoutDir(record, this.input.path, sourceExtension, targetExtension);
    return this.prepareDir(record, this.input.path, sourceExtension, targetExtension);
  }

  /**
   * No run directory: the engine reads `inputPath` and writes to a path of the store's `work`
   * folder; `inputName` is the name an engine that places the input itself gives it (Engine.namesItsInputOf).
   */
  private withoutDir(record: ConversionRecord, inputPath: string, sourceExtension: string, targetExtension: string): PreparedFiles {
    const files = { inputPath, inputName: engineInputName(record.original_name, sourceExtension), outputPath: this.blobs.outputPathFor(this.id, safeExtension(targetExtension)) };
    this.known = { [files.inputPath]: 'the input file', [files.outputPath]: 'the output file' };
    this.pendingOutput = files.outputPath;
    return files;
  }

  /**
   * An input kept in the record: handed over as bytes, with a path that only names it (nothing
   * is written); or, for an engine that reads no bytes (one that stopped reading them since the
   * submission), written into a run directory as any input is linked there.
   */
  private async prepareFromRecord(record: ConversionRecord, bytes: Buffer, sourceExtension: string, targetExtension: string, asBytes: boolean): Promise<PreparedFiles> {
    if (!asBytes) return this.prepareDir(record, bytes, sourceExtension, targetExtension);
    return { ...this.withoutDir(record, this.blobs.outputPathFor(this.id, safeExtension(sourceExtension)), sourceExtension, targetExtension), inputBytes: bytes };
  }

  private async prepareDir(record: ConversionRecord, input: string | Buffer, sourceExtension: string, targetExtension: string): Promise<JobFiles> {
    this.jobDir = await this.dirs.take();
    const jobDir = this.jobDir;
    const files = await prepareJobFiles(jobDir, input, record.original_name, sourceExtension, targetExtension);
    this.jobFiles = files;
    this.known = { [files.inputPath]: 'the input file', [files.outputPath]: 'the output file', [`${jobDir}/`]: '', [jobDir]: '.' };
    this.pendingOutput = files.outputPath;
    return files;
  }

  /** The output becomes the conversion's result: no longer this run's to remove. */
  async adoptResult(outputPath: string): Promise<void> {
    await this.blobs.adoptResult(this.id, outputPath);
    this.pendingOutput = null;
  }

  /**
   * Before a failure is recorded: once a client sees it, nothing of the run is on disk. A removal
   * that fails here is tried again by `release` (the end is recorded either way).
   */
  async discardBeforeFailure(): Promise<void> {
    // Without a run directory, an engine's scratch is beside the output in the work area: an
    // engine host killed at a time limit or a cancel left it there.
    if (this.pendingOutput && !this.jobDir) await rm(scratchDirFor(this.pendingOutput), { recursive: true, force: true }).catch(() => undefined);
    if (this.pendingOutput) await this.blobs.discardOutput(this.pendingOutput).then(() => (this.pendingOutput = null), () => undefined);
    // Removed whole, never kept for another run (release() included): an engine stopped by a
    // time limit or a cancel may still be writing into it.
    this.jobFiles = undefined;
    if (this.jobDir) await this.dirs.give(this.jobDir).then(() => (this.jobDir = null), () => undefined);
  }

  /** At the end of the run, whichever way it ended. */
  async release(): Promise<void> {
    if (this.pendingOutput) await this.blobs.discardOutput(this.pendingOutput);
    if (this.jobDir) await this.dirs.give(this.jobDir, this.jobFiles);
    await this.input?.release();
  }
}
