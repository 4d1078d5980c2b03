/**
 * A bucket for benches that run convd on S3: s3rver, as the suites start it (test/helpers/s3.ts),
 * in a process of its own (bench/lib/s3-process.ts) so that its CPU time can be read apart. Its
 * files live in a temp dir of the run (removed by stop(), and on any exit by processes.ts); the
 * daemons need S3_ENV (s3rver's fixed credentials) in their environment.
 */
import { join } from 'node:path';
import { S3_ENV } from '../../test/helpers/s3.ts';
import { ROOT } from './daemon.ts';
import { removeDir, spawnTracked, stopChild, tempDir } from './processes.ts';

export { S3_ENV };

export interface BenchBucket {
  endpoint: string;
  /** One `--blob-url` per prefix asked for, in order. */
  blobUrls: string[];
  /** The s3rver process. */
  pid: number;
  stop(): Promise<void>;
}

export async function startBenchBucket(prefixes: string[], bucket = 'convd-bench'): Promise<BenchBucket> {
  const dir = await tempDir('s3');
  // startS3 makes its directory under os.tmpdir(), which is TMPDIR: inside the run's temp dir.
  const child = spawnTracked(process.execPath, ['--import', 'tsx', join(ROOT, 'bench', 'lib', 's3-process.ts'), JSON.stringify({ bucket, prefixes })], {
    cwd: ROOT,
    env: { ...process.env, ...S3_ENV, TMPDIR: dir },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  try {
    const ready = await new Promise<{ endpoint: string; blobUrls: string[] }>((resolve, reject) => {
      let out = '';
      const timer = setTimeout(() => reject(new Error('s3rver did not start within 30 s')), 30_000);
      child.stdout!.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        const end = out.indexOf('\n');
        if (end === -1) return;
        clearTimeout(timer);
        try {
          resolve(JSON.parse(out.slice(0, end)) as { endpoint: string; blobUrls: string[] });
        } catch (error) {
          reject(error instanceof Error ? error : new Error(String(error)));
        }
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`s3rver exited with ${code} before it was ready`));
      });
    });
    child.stdout!.resume();
    return {
      ...ready,
      pid: child.pid!,
      async stop() {
        await stopChild(child, 10_000);
        await removeDir(dir);
      },
    };
  } catch (error) {
    await stopChild(child, 2000);
    await removeDir(dir);
    throw error;
  }
}
