import { mkdir, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { ConversionFailure } from '../../errors/api-error.ts';
import { engineEnvironment, ENGINE_NICENESS } from '../process/group.ts';
import { isExecutableFile, searchPath } from '../process/path-search.ts';
import { lastLines, runProcess } from '../subprocess.ts';

/**
 * HEIC photos as iPhones save them are HEVC-compressed, which sharp's own libheif cannot decode
 * (its prebuilt binaries leave HEVC out for patent reasons). libheif's command-line decoder,
 * where the system has it (Debian's libheif-examples, with libde265), decodes them to PNG for
 * libvips to go on from. Named heif-dec since libheif 1.17, heif-convert before.
 */
const DECODERS = ['heif-dec', 'heif-convert'];

export const HEVC_INSTALL_HINT = 'install libheif\'s decoder (Debian and Ubuntu: `apt-get install libheif-examples`; Fedora: `dnf install libheif-tools`) and restart convd, or set CONVD_HEIF_DECODER_PATH';

let found: Promise<string | undefined> | undefined;

/** The HEVC-capable decoder: CONVD_HEIF_DECODER_PATH, else heif-dec or heif-convert on PATH. Found once. */
export function findHeifDecoder(env: NodeJS.ProcessEnv = process.env): Promise<string | undefined> {
  found ??= (async () => {
    const configured = env.CONVD_HEIF_DECODER_PATH;
    if (configured) return (await isExecutableFile(configured)) ? configured : undefined;
    for (const name of DECODERS) {
      const path = await searchPath(name, env.PATH ?? '');
      if (path) return path;
    }
    return undefined;
  })();
  return found;
}

export interface HevcDecodeJob {
  inputPath: string;
  /** A directory of the job's own, made here, for the decoder's output. */
  workDir: string;
  signal: AbortSignal;
  timeLimitMs?: number | undefined;
  memoryLimitMb?: number | undefined;
}

/**
 * Decodes the primary image of an HEVC HEIC to PNG with libheif's decoder, in a process group of
 * its own under the job's time and memory limits. Returns the PNG's path (inside workDir).
 */
export async function decodeHevcToPng(decoder: string, job: HevcDecodeJob): Promise<string> {
  await mkdir(job.workDir, { recursive: true, mode: 0o700 });
  const output = join(job.workDir, 'decoded.png');
  const result = await runProcess(decoder, [job.inputPath, output], {
    signal: job.signal,
    timeoutMs: job.timeLimitMs,
    dieWithParent: true,
    niceness: ENGINE_NICENESS,
    memoryLimitMb: job.memoryLimitMb,
    cwd: job.workDir,
    env: engineEnvironment(),
  });
  // A file of several top-level images is written as decoded-1.png, decoded-2.png...: the first
  // is the primary one. Depth and alpha auxiliaries carry a suffix after the name.
  const written = (await readdir(job.workDir)).filter((name) => /^decoded(-1)?\.png$/.test(name)).sort();
  if (result.code !== 0 || written.length === 0) {
    const why = lastLines(result.stderrTail.split(job.inputPath).join('the input'));
    if (/memory|alloc/i.test(why)) throw new ConversionFailure('memory_limit', `Decoding the HEIC image needed more memory than its limit of ${job.memoryLimitMb} MB.`);
    throw new ConversionFailure('input_invalid', `The input cannot be decoded as heif: ${why || `the decoder exited with ${result.code ?? result.signal}`}`);
  }
  return join(job.workDir, written[0]!);
}

export async function removeWorkDir(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true });
}
