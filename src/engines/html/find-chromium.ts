import { realpath } from 'node:fs/promises';
import { isExecutableFile, searchPath } from '../process/path-search.ts';
import { runProcess } from '../subprocess.ts';

export type ChromiumInstall =
  | { ready: true; path: string; version: string }
  | { ready: false; path: string | null; problem: string };

export const CHROMIUM_INSTALL_HINT = 'install Debian\'s chromium (apt-get install chromium), or set CONVD_CHROMIUM_PATH';
const NAMES = ['chromium', 'chromium-browser', 'google-chrome-stable', 'google-chrome'];
const PROBE_TIME_LIMIT_MS = 30_000;

/** Chromium: CONVD_CHROMIUM_PATH, else the first of chromium, chromium-browser, google-chrome on PATH; its version. */
export async function findChromium(env: NodeJS.ProcessEnv): Promise<ChromiumInstall> {
  let path: string | undefined;
  if (env.CONVD_CHROMIUM_PATH) {
    path = (await isExecutableFile(env.CONVD_CHROMIUM_PATH)) ? env.CONVD_CHROMIUM_PATH : undefined;
    if (!path) return { ready: false, path: env.CONVD_CHROMIUM_PATH, problem: `${env.CONVD_CHROMIUM_PATH} is not an executable file` };
  } else {
    for (const name of NAMES) {
      path = await searchPath(name, env.PATH ?? '');
      if (path) break;
    }
  }
  if (!path) return { ready: false, path: null, problem: `Chromium not found: ${CHROMIUM_INSTALL_HINT}` };
  let version: string | undefined;
  try {
    const result = await runProcess(await realpath(path), ['--version'], {
      timeoutMs: PROBE_TIME_LIMIT_MS,
      onStdoutLine: (line) => {
        version ??= /(?:Chromium|Chrome)\s+([\d.]+)/.exec(line)?.[1];
      },
    });
    if (result.code !== 0 || !version) return { ready: false, path, problem: `${path} --version exited with ${result.code ?? result.signal}` };
  } catch (error) {
    return { ready: false, path, problem: `Chromium does not run: ${error instanceof Error ? error.message : String(error)}` };
  }
  return { ready: true, path, version };
}
