import { runProcess } from '../subprocess.ts';

const VERSION_TIME_LIMIT_MS = 15_000;

/** Encoder names from `ffmpeg -encoders` (lines like ` A..... libopus  libopus Opus`). */
export async function listEncoders(ffmpeg: string): Promise<Set<string>> {
  const encoders = new Set<string>();
  const result = await runProcess(ffmpeg, ['-hide_banner', '-encoders'], {
    timeoutMs: VERSION_TIME_LIMIT_MS,
    onStdoutLine: (line) => {
      const match = /^\s*[VAS][A-Z.]{5}\s+(\S+)/.exec(line);
      if (match?.[1]) encoders.add(match[1]);
    },
  });
  if (result.code !== 0) throw new Error(`ffmpeg -encoders exited with ${result.code}`);
  return encoders;
}
