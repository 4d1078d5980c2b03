import { existsSync } from 'node:fs';
import { realpath } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { searchPath } from '../process/path-search.ts';
import { runProcess } from '../subprocess.ts';

/** What a probe found of LibreOffice and the Python that can talk to it. */
export type OfficeInstall =
  | { ready: true; soffice: string; sofficeBin: string; python: string; version: string }
  | { ready: false; soffice: string | null; problem: string };

const INSTALL_HINT = 'install Debian\'s libreoffice-core-nogui, libreoffice-writer-nogui, libreoffice-calc-nogui, libreoffice-impress-nogui, libreoffice-draw-nogui, libreoffice-math-nogui and python3-uno';
const PROBE_TIME_LIMIT_MS = 30_000;

/**
 * LibreOffice: `CONVD_SOFFICE_PATH`, else `soffice` (or `libreoffice`) on PATH; then soffice.bin
 * beside the real file (the bridge starts it directly: see bridge.py), its version, and a Python
 * that imports LibreOffice's `uno`: `CONVD_OFFICE_PYTHON`, else LibreOffice's own bundled one,
 * else /usr/bin/python3 (Debian's python3-uno is built for it; a pyenv or venv `python3` first on
 * PATH usually has no `uno`), else `python3` on PATH.
 */
export async function findOffice(env: NodeJS.ProcessEnv): Promise<OfficeInstall> {
  const soffice = env.CONVD_SOFFICE_PATH || (await searchPath('soffice', env.PATH ?? '')) || (await searchPath('libreoffice', env.PATH ?? ''));
  if (!soffice) return { ready: false, soffice: null, problem: `LibreOffice not found (set CONVD_SOFFICE_PATH, or ${INSTALL_HINT})` };
  let program: string;
  try {
    program = dirname(await realpath(soffice));
  } catch {
    return { ready: false, soffice, problem: `${soffice} does not exist` };
  }
  const sofficeBin = existsSync(join(program, 'soffice.bin')) ? join(program, 'soffice.bin') : soffice;
  let version: string;
  try {
    version = await firstLine(sofficeBin, ['--version']);
  } catch (error) {
    return { ready: false, soffice, problem: `LibreOffice does not run: ${error instanceof Error ? error.message : String(error)}` };
  }
  const candidates = env.CONVD_OFFICE_PYTHON
    ? [env.CONVD_OFFICE_PYTHON]
    : [join(program, 'python'), '/usr/bin/python3', await searchPath('python3', env.PATH ?? '')].filter((path): path is string => Boolean(path));
  for (const python of candidates) {
    if (!existsSync(python)) continue;
    const check = await runProcess(python, ['-c', 'import uno'], { timeoutMs: PROBE_TIME_LIMIT_MS }).catch(() => null);
    if (check?.code === 0) return { ready: true, soffice, sofficeBin, python, version: /LibreOffice ([\d.]+)/.exec(version)?.[1] ?? version };
  }
  return {
    ready: false, soffice,
    problem: `no Python with LibreOffice's uno module (tried ${candidates.join(', ')}): install python3-uno, or set CONVD_OFFICE_PYTHON`,
  };
}

async function firstLine(binary: string, args: string[]): Promise<string> {
  let first: string | undefined;
  const result = await runProcess(binary, args, {
    timeoutMs: PROBE_TIME_LIMIT_MS,
    onStdoutLine: (line) => {
      if (line.trim()) first ??= line.trim();
    },
  });
  if (result.code !== 0 || !first) throw new Error(`${binary} ${args.join(' ')} exited with ${result.code ?? result.signal}`);
  return first;
}

/**
 * LibreOffice Math's files, from the program directory (soffice.bin's): its library (Linux,
 * macOS, Windows) and its configuration (TDF's builds, Debian's per-package registry).
 */
const MATH_FILES = [
  'libsmlo.so', 'libsmlo.dylib', 'smlo.dll',
  '../share/registry/math.xcd', '../share/.registry/math.xcd', '../Resources/registry/math.xcd',
];

/**
 * The file that shows LibreOffice Math is installed beside `soffice`, or undefined. Without Math
 * LibreOffice still opens and writes documents, but every formula in them (OMML in a docx, a
 * formula object in an odt or rtf, pandoc's math in the docx it hands on) is lost in what it
 * writes, without an error.
 */
export async function officeMath(soffice: string): Promise<string | undefined> {
  let program: string;
  try {
    program = dirname(await realpath(soffice));
  } catch {
    return undefined;
  }
  return MATH_FILES.map((file) => join(program, file)).find((path) => existsSync(path));
}
