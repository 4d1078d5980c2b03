import { randomBytes } from 'node:crypto';
import { ConversionFailure } from '../../errors/api-error.ts';
import type { ConversionOptions } from '../../model/conversion.ts';
import { runQpdf, type MemoryFile, type PageSource } from './qpdf.ts';

/** qpdf options of each pdf -> pdf variant. */
const VARIANT_OPTIONS: Record<string, string[]> = {
  compress: ['--object-streams=generate', '--compress-streams=y', '--recompress-flate', '--compression-level=9'],
  linearize: ['--linearize', '--compress-streams=y'],
};

/** What an encrypted result allows without its owner password (qpdf's 256-bit flags). */
const PERMISSION_FLAGS: Record<string, string[]> = {
  all: [],
  print: ['--print=full', '--modify=none', '--extract=n'],
  none: ['--print=none', '--modify=none', '--extract=n'],
};

/** qpdf warnings that mean it had to repair the file: the input is broken, so the job fails. */
const REPAIRED = /damaged|reconstruct|recover/i;

const text = (options: ConversionOptions, name: string): string | undefined => {
  const value = options[name];
  return typeof value === 'string' ? value : undefined;
};

/** Whether the options ask for anything of the first pass (opening with a password, pages, rotation, flattening). */
export function needsOpening(options: ConversionOptions): boolean {
  return ['password', 'pages', 'rotate', 'flatten'].some((name) => options[name] !== undefined && options[name] !== false);
}

/**
 * The first pass: opens the input (with its password), writes it decrypted (pdf-lib and
 * Ghostscript read no encrypted file), keeps and orders the pages asked for, turns them and
 * draws form fields and annotations into the page.
 */
export function openingArguments(options: ConversionOptions): string[] {
  const args: string[] = [];
  const password = text(options, 'password');
  if (password !== undefined) args.push(`--password=${password}`);
  args.push('--decrypt');
  if (options.flatten === true) args.push('--generate-appearances', '--flatten-annotations=all');
  const pages = text(options, 'pages');
  if (pages !== undefined) args.push('--pages', '.', pages, '--');
  const rotate = text(options, 'rotate');
  if (rotate !== undefined) args.push(`--rotate=+${rotate}:${text(options, 'rotate_pages') ?? '1-z'}`);
  return args;
}

/** The last pass: the variant's way of writing the file, and encryption. */
export function finishingArguments(variant: string | null, options: ConversionOptions): string[] {
  let args = [...(VARIANT_OPTIONS[variant ?? 'compress'] ?? VARIANT_OPTIONS.compress!)];
  // PDF/A-1 is PDF 1.4, which has no object streams.
  if (options.pdfa === '1b') args = args.map((arg) => (arg === '--object-streams=generate' ? '--object-streams=disable' : arg));
  const user = text(options, 'encrypt_user_password');
  const owner = text(options, 'encrypt_owner_password');
  if (user !== undefined || owner !== undefined) {
    // Without an owner password of its own, anyone with the user password could lift the permissions.
    const ownerPassword = owner ?? randomBytes(24).toString('base64url');
    // The passwords as `--user-password=...`: given bare, one starting with - or @ would be read
    // as an option or as a file of arguments.
    args.push('--encrypt', `--user-password=${user ?? ''}`, `--owner-password=${ownerPassword}`, '--bits=256', ...PERMISSION_FLAGS[text(options, 'permissions') ?? 'all']!, '--');
  }
  return args;
}

/**
 * Runs one qpdf pass; its failures become the job's: a file qpdf cannot read or had to repair
 * is input_invalid, as is a password that is missing or wrong and a page the file does not have.
 */
export async function qpdfPass(args: string[], input: PageSource, outputPath: string | null, signal: AbortSignal, hasPassword: boolean, memory: readonly MemoryFile[] = []): Promise<string[]> {
  const result = await runQpdf(args, input, outputPath, signal, memory);
  const lines = result.messages.filter((line) => line.trim().length > 0);
  const detail = lines.slice(-3).join(' | ');
  if (lines.some((line) => /invalid password/i.test(line))) {
    throw new ConversionFailure('input_invalid', hasPassword
      ? 'The password does not open this PDF.'
      : 'The PDF is encrypted: give the password that opens it (option password).');
  }
  if (result.code === 2 && /range|page/i.test(detail) && args.includes('--pages')) {
    throw new ConversionFailure('input_invalid', `The pages asked for are not in this PDF: ${detail}`);
  }
  if (result.code === 2) {
    throw new ConversionFailure('input_invalid', `The input is not a readable PDF: ${detail || 'qpdf could not open it'}`);
  }
  if (result.code === 3 && REPAIRED.test(detail)) {
    throw new ConversionFailure('input_invalid', `The PDF is damaged: ${detail}`);
  }
  if (result.code !== 0 && result.code !== 3) {
    throw new ConversionFailure('conversion_failed', `qpdf failed (${result.code}): ${detail || 'no message'}`);
  }
  return lines;
}

/** The number of pages of a PDF that opens without a password (one the first pass wrote). */
export async function pageCount(path: string, signal: AbortSignal): Promise<number> {
  const lines = await qpdfPass(['--show-npages'], path, null, signal, false);
  const count = Number(lines.find((line) => /^\s*\d+\s*$/.test(line)));
  if (!Number.isInteger(count)) throw new ConversionFailure('conversion_failed', `qpdf did not tell the page count: ${lines.slice(-2).join(' | ')}`);
  return count;
}
