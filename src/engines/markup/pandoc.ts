import { constants as fsConstants } from 'node:fs';
import { access, mkdir, mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { lastLines, runProcess } from '../subprocess.ts';

/** Where pandoc was found: CONVD_PANDOC_PATH, or PATH. */
export interface FoundPandoc {
  path: string;
  origin: 'env' | 'path';
}

/** The first version with --sandbox (no file or network access from the document). */
export const MIN_VERSION = [2, 15] as const;
export const INSTALL_HINT = "install Debian's pandoc (apt-get install pandoc), or set CONVD_PANDOC_PATH";

const PROBE_TIME_LIMIT_MS = 15_000;

/** `CONVD_PANDOC_PATH` as given (a wrong one shows as a failing probe), else `pandoc` on PATH. */
export async function findPandoc(env: NodeJS.ProcessEnv): Promise<FoundPandoc | undefined> {
  if (env.CONVD_PANDOC_PATH) return { path: env.CONVD_PANDOC_PATH, origin: 'env' };
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, 'pandoc');
    if (await isExecutableFile(candidate)) return { path: candidate, origin: 'path' };
  }
  return undefined;
}

async function isExecutableFile(file: string): Promise<boolean> {
  try {
    if (!(await stat(file)).isFile()) return false;
    await access(file, fsConstants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The version `pandoc --version` reports on its first line (`pandoc 2.17.1.1`). */
export async function pandocVersion(pandoc: string): Promise<string> {
  let first: string | undefined;
  const result = await runProcess(pandoc, ['--version'], {
    timeoutMs: PROBE_TIME_LIMIT_MS,
    onStdoutLine: (line) => {
      if (line.trim()) first ??= line.trim();
    },
  });
  const version = /^pandoc(?:\.exe)?\s+(\d+(?:\.\d+)*)/.exec(first ?? '')?.[1];
  if (result.code !== 0 || !version) {
    throw new Error(`${pandoc} --version exited with ${result.code ?? result.signal}${first ? ` and printed "${first}"` : ''}: ${lastLines(result.stderrTail)}`);
  }
  return version;
}

/**
 * The version of pandoc's document types this pandoc reads and writes as JSON (`[1, 22, 1]` for
 * pandoc 2.17): the text source is handed to it in that form (text-source.ts), and its JSON
 * reader refuses another major version. Read from what it writes for an empty document.
 */
export async function pandocApiVersion(pandoc: string): Promise<number[]> {
  let output = '';
  const result = await runProcess(pandoc, ['--from=html', '--to=json', '/dev/null'], {
    timeoutMs: PROBE_TIME_LIMIT_MS,
    onStdoutLine: (line) => {
      output += line;
    },
  });
  const match = /"pandoc-api-version":\[([\d,]+)\]/.exec(output);
  if (result.code !== 0 || !match) {
    throw new Error(`pandoc --to=json exited with ${result.code ?? result.signal} without its API version: ${lastLines(result.stderrTail)}`);
  }
  return match[1]!.split(',').map(Number);
}

/** True when `version` (dotted numbers) is at least `minimum`. */
export function versionAtLeast(version: string, minimum: readonly number[]): boolean {
  const parts = version.split('.').map(Number);
  for (let i = 0; i < minimum.length; i++) {
    const have = parts[i] ?? 0;
    if (have !== minimum[i]) return have > minimum[i]!;
  }
  return true;
}

/**
 * The data files pandoc 2.17's docx, odt and epub writers read (its default reference documents'
 * parts, and the EPUB stylesheet). A pandoc built without `embed_data_files` (Debian's) reads
 * them from disk, which its sandbox forbids: `--sandbox -t docx` fails with "Could not find data
 * file data/data/docx/[Content_Types].xml" (jgm/pandoc#8128). The sandbox does let the writer
 * read the files named on the command line, so the engine hands these over that way
 * (markup-engine.ts). Another version may need others: the probe asks for what it misses.
 */
export const WRITER_DATA_FILES = [
  ...['[Content_Types].xml', '_rels/.rels', 'docProps/app.xml', 'docProps/core.xml', 'docProps/custom.xml', 'word/document.xml',
    'word/fontTable.xml', 'word/footnotes.xml', 'word/comments.xml', 'word/numbering.xml', 'word/settings.xml',
    'word/webSettings.xml', 'word/styles.xml', 'word/_rels/document.xml.rels', 'word/_rels/footnotes.xml.rels',
    'word/theme/theme1.xml'].map((part) => `docx/${part}`),
  ...['mimetype', 'manifest.rdf', 'styles.xml', 'content.xml', 'meta.xml', 'settings.xml', 'Configurations2/accelerator/current.xml',
    'Thumbnails/thumbnail.png', 'META-INF/manifest.xml'].map((part) => `odt/${part}`),
  'epub.css',
];

/** Names pandoc may be asked for: relative, no `..`, no option-like start. */
const DATA_FILE_NAME = /^(?!-)(?!.*(?:^|\/)\.\.(?:\/|$))[\w.\-[\]/]+$/;

/**
 * Copies of pandoc's own data files `names`, as `pandoc --print-default-data-file` gives them
 * (the files of this very pandoc, embedded or on disk), by name. A name this pandoc does not
 * have is left out (the probe finds out whether a writer needed it).
 */
export async function readDataFiles(pandoc: string, names: readonly string[]): Promise<Map<string, Buffer>> {
  const files = new Map<string, Buffer>();
  const staging = await mkdtemp(join(tmpdir(), 'convd-pandoc-data-'));
  try {
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < names.length) {
        const name = names[next++]!;
        if (!DATA_FILE_NAME.test(name)) continue;
        const target = join(staging, name);
        await mkdir(dirname(target), { recursive: true });
        // -o before --print-default-data-file: pandoc writes the bytes there (binary-safe).
        const result = await runProcess(pandoc, [`--output=${target}`, `--print-default-data-file=${name}`], { timeoutMs: PROBE_TIME_LIMIT_MS });
        if (result.code === 0) files.set(name, await readFile(target));
      }
    };
    await Promise.all([worker(), worker(), worker(), worker()]);
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
  return files;
}

/** The data file a sandboxed run missed, from its message (`Could not find data file data/data/NAME`). */
export function missingDataFile(stderr: string): string | undefined {
  return /Could not find data file (?:data\/data\/|data\/)?(\S.*?)\s*$/m.exec(stderr)?.[1];
}
