import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { ConversionFailure } from '../../errors/api-error.ts';
import type { ConversionWarning } from '../../model/conversion.ts';
import { engineEnvironment, ENGINE_NICENESS } from '../process/group.ts';
import { lastLines, runProcess } from '../subprocess.ts';

/** The Info fields carried into a PDF/A, as PostScript's pdfmark names them. */
export interface DocumentInfo {
  Title?: string;
  Author?: string;
  Subject?: string;
  Keywords?: string;
  Creator?: string;
  CreationDate?: Date;
}

export interface PdfaRun {
  gs: string;
  /** The sRGB profile the output intent names (a file Ghostscript may read under -dSAFER). */
  iccProfile: string;
  level: '1b' | '2b' | '3b';
  info: DocumentInfo;
  inputPath: string;
  outputPath: string;
  signal: AbortSignal;
  timeLimitMs?: number;
  memoryLimitMb?: number;
}

/**
 * PostScript literal string of printable ASCII text, or undefined for other text: Ghostscript
 * 10.0 drops the whole DOCINFO of a PDF/A when a field has anything else (an ë as much as an Ω,
 * and a parenthesis or backslash even escaped).
 */
function asciiString(text: string): string | undefined {
  return /^[\u0020-\u0027\u002a-\u005b\u005d-\u007e]*$/u.test(text) ? `(${text})` : undefined;
}

const pdfDate = (date: Date): string => `(D:${date.toISOString().replace(/[-:T]/g, '').slice(0, 14)}Z)`;

/**
 * The program run before the input: the document's information as a DOCINFO pdfmark (Ghostscript
 * 10.0 drops the input's own Info when any of it is in UTF-16, as pdf-lib writes it) and the
 * output intent PDF/A requires, with the sRGB profile.
 */
function definitions(run: PdfaRun): { program: string; dropped: string[] } {
  const fields: string[] = [];
  const dropped: string[] = [];
  for (const key of ['Title', 'Author', 'Subject', 'Keywords', 'Creator'] as const) {
    const value = run.info[key];
    if (value === undefined || value === '') continue;
    const literal = asciiString(value);
    if (literal === undefined) dropped.push(key.toLowerCase());
    else fields.push(`/${key} ${literal}`);
  }
  if (run.info.CreationDate) fields.push(`/CreationDate ${pdfDate(run.info.CreationDate)}`);
  const program = [
    fields.length > 0 ? `[ ${fields.join(' ')} /DOCINFO pdfmark` : '',
    `/ICCProfile <${Buffer.from(run.iccProfile).toString('hex')}> def`,
    '[/_objdef {icc_PDFA} /type /stream /OBJ pdfmark',
    '[{icc_PDFA} << /N 3 >> /PUT pdfmark',
    '[{icc_PDFA} ICCProfile (r) file /PUT pdfmark',
    '[/_objdef {OutputIntent_PDFA} /type /dict /OBJ pdfmark',
    '[{OutputIntent_PDFA} << /Type /OutputIntent /S /GTS_PDFA1 /DestOutputProfile {icc_PDFA} /OutputConditionIdentifier (sRGB) >> /PUT pdfmark',
    '[{Catalog} << /OutputIntents [ {OutputIntent_PDFA} ] >> /PUT pdfmark',
  ].join('\n');
  return { program, dropped };
}

/**
 * Rewrites a PDF as PDF/A with Ghostscript's pdfwrite: fonts embedded, colours in sRGB, an
 * XMP packet naming the part and conformance. A process of its own under -dSAFER, in a fresh
 * directory, under the job's limits. Returns a warning for each field of the document's
 * information that Ghostscript cannot keep (text beyond ASCII).
 */
export async function makePdfa(run: PdfaRun): Promise<ConversionWarning[]> {
  const work = await mkdtemp(join(dirname(run.outputPath), 'pdfa-'));
  try {
    const { program, dropped } = definitions(run);
    const definitionsPath = join(work, 'pdfa.ps');
    await writeFile(definitionsPath, program);
    const args = [
      '-q', '-dSAFER', '-dBATCH', '-dNOPAUSE', '-dNOPROMPT', '-sstdout=%stderr',
      `--permit-file-read=${run.iccProfile}`,
      '-sDEVICE=pdfwrite', `-dPDFA=${run.level[0]}`, '-dPDFACompatibilityPolicy=1',
      '-sColorConversionStrategy=RGB', '-dAutoRotatePages=/None',
      `-sOutputFile=${run.outputPath}`,
      definitionsPath, run.inputPath,
    ];
    const result = await runProcess(run.gs, args, {
      cwd: work,
      env: engineEnvironment({ TMPDIR: work }),
      signal: run.signal,
      timeoutMs: run.timeLimitMs,
      dieWithParent: true,
      niceness: ENGINE_NICENESS,
      memoryLimitMb: run.memoryLimitMb,
    });
    const said = /^Error: .*$/m.exec(result.stderrTail)?.[0] ?? lastLines(result.stderrTail.split(work).join('.'), 2);
    const size = await stat(run.outputPath).then((info) => info.size, () => 0);
    if (result.code !== 0 || size === 0) {
      throw new ConversionFailure('conversion_failed', `Ghostscript could not make a PDF/A (${result.code === null ? `killed by ${result.signal}` : `exit ${result.code}`})${said ? `: ${said}` : '.'}`);
    }
    return dropped.map((field) => ({
      code: 'metadata_dropped' as const,
      field,
      message: `The ${field} has characters (beyond ASCII, or parentheses) which Ghostscript 10.0 cannot keep in a PDF/A: it was left out.`,
    }));
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}
