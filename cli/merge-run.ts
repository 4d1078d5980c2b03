import { basename, dirname } from 'node:path';
import { ClientError } from '../src/client/types.ts';
import type { Context } from './context.ts';
import { conversionJson } from './conversion-json.ts';
import { usageError } from './errors.ts';
import { EXIT, exitCodeForStatus } from './exit-codes.ts';
import { classifyInputs } from './inputs.ts';
import { attachFiles } from './attached-files.ts';
import { checkOptions } from './option-check.ts';
import { createProgress } from './progress.ts';
import { formatBytes } from './render.ts';
import { describeError } from './report.ts';
import { NameReservations, resolveDestination, saveDownload } from './save.ts';
import { MAX_API_WAIT_SECONDS, waitForEnd } from './wait.ts';

export interface MergeOptions {
  output: string;
  option?: [string, string][];
  variant?: string;
  wait?: true | number;
  idempotencyKey?: string;
}

/** `conv merge`: several files into one PDF, in argument order (see commands/merge.ts). */
export async function runMerge(ctx: Context, inputArgs: string[], options: MergeOptions): Promise<void> {
  const out = ctx.output;
  const inputs = await classifyInputs(inputArgs, ctx.io.cwd, undefined);
  const files = inputs.map((input) => {
    if (input.kind !== 'file') throw usageError(`${input.name}: merge takes files on this machine, not URLs or stdin`);
    return input;
  });
  if (files.length < 2) throw usageError('give at least two files to merge');
  const destination = await resolveDestination(options.output, ctx.io.cwd);
  if (destination.kind === 'stdout' && out.mode.json) throw usageError('--json and -o - both want stdout: choose one');
  if (destination.kind === 'file' && files.some((file) => file.path === destination.path)) {
    throw usageError(`-o ${options.output}: that is one of the files to merge; write the result elsewhere`);
  }
  const client = await ctx.client({ allowLocal: true, localWorkers: 1 });
  const raw = options.option ?? [];
  // Checked against the formats listing before anything is uploaded, as conv convert does.
  const details = raw.length > 0 || options.variant !== undefined
    ? await client.getFormat('pdf').catch((error: unknown) => {
      if (error instanceof ClientError && error.status === 404) return null;
      throw error;
    })
    : null;
  // An option that names a file (watermark_image) is given a path here: the file goes with the files merged.
  const attached = details ? await attachFiles(details, 'pdf', raw, ctx.io.cwd) : { raw, attachments: [] };
  const typed = details ? checkOptions(details, 'pdf', attached.raw, options.variant) : null;
  const waitSeconds = options.wait === true || options.wait === undefined ? Infinity : options.wait;
  const deadline = Date.now() + waitSeconds * 1000;
  const progress = createProgress(ctx.io.stderr, 1, out.mode.quiet);
  const name = `${files.length} files`;
  try {
    let conversion = await client.createConversion({
      input: { kind: 'file', path: files[0]!.path },
      mergeWith: files.slice(1).map((file) => ({ kind: 'file' as const, path: file.path })),
      ...(attached.attachments.length > 0 && { attachments: attached.attachments }),
      target: 'pdf',
      ...(options.variant !== undefined && { variant: options.variant }),
      ...(typed ? { options: typed } : raw.length > 0 ? { options: Object.fromEntries(raw) } : {}),
      ...(options.idempotencyKey !== undefined && { idempotencyKey: options.idempotencyKey }),
      wait: 0,
    });
    const update = (c: typeof conversion) => progress?.update(0, { name, status: c.status, progress: c.progress });
    update(conversion);
    const waited = await waitForEnd(client, conversion, { deadline, pollSeconds: progress ? 1 : MAX_API_WAIT_SECONDS, onUpdate: update });
    conversion = waited.conversion;
    progress?.clear();
    if (waited.timedOut) {
      out.error('wait_timeout', `${conversion.id} is still ${conversion.status}`, `follow it with \`conv get ${conversion.id}\``);
      return ctx.fail(EXIT.waitTimeout);
    }
    const exit = exitCodeForStatus(conversion.status);
    if (exit !== EXIT.ok) {
      const reason = conversion.error ?? { code: conversion.status, message: `the conversion was ${conversion.status}` };
      out.error(reason.code, `${reason.message} (${conversion.id})`);
      return ctx.fail(exit);
    }
    const download = await client.download(conversion.id);
    // In a directory the result is merged.pdf, or merged-1.pdf where an input has that name there.
    const names = new NameReservations();
    if (destination.kind === 'dir') for (const file of files) if (dirname(file.path) === destination.path) names.reserve(basename(file.path));
    const path = await saveDownload(download, destination, ctx.io.stdout, destination.kind === 'dir' ? names.reserve('merged.pdf') : download.filename);
    if (out.mode.json) return out.json(conversionJson(conversion, { local: ctx.isLocal(), savedTo: path }));
    for (const warning of conversion.warnings ?? []) out.warn(warning.message);
    if (!out.mode.quiet && path) out.line(`${name} → ${path} (${formatBytes(conversion.result?.size)}) ${out.out.dim(conversion.id)}`);
  } catch (error) {
    progress?.clear();
    const { code, message, hint, exit } = describeError(error);
    out.error(code, message, hint);
    ctx.fail(exit);
  }
}
