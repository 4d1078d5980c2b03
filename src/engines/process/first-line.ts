import { lastLines, runProcess } from '../subprocess.ts';

const VERSION_TIME_LIMIT_MS = 15_000;

/** The first line a binary prints (its version), for an engine's probe. */
export async function firstLine(binary: string, args: string[]): Promise<string> {
  let first: string | undefined;
  const result = await runProcess(binary, args, {
    timeoutMs: VERSION_TIME_LIMIT_MS,
    onStdoutLine: (line) => {
      first ??= line;
    },
  });
  if (result.code !== 0 || !first) throw new Error(`${binary} ${args.join(' ')} exited with ${result.code}: ${lastLines(result.stderrTail)}`);
  return first;
}
