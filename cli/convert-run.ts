import { basename, dirname, resolve } from 'node:path';
import { conversionJson } from './conversion-json.ts';
import { ClientError, type ConvClient, type CreateConversionRequest } from '../src/client/types.ts';
import type { ConversionOptions, PublicConversion } from '../src/model/conversion.ts';
import type { Context } from './context.ts';
import { usageError } from './errors.ts';
import { EXIT, exitCodeForStatus, type ExitCode } from './exit-codes.ts';
import { classifyInputs, extensionOf, toInputSpec, type InputArg } from './inputs.ts';
import { attachFiles, type AttachedFile } from './attached-files.ts';
import { checkOptions } from './option-check.ts';
import { mapConcurrent } from './pool.ts';
import { createProgress } from './progress.ts';
import { colorStatus, formatBytes } from './render.ts';
import { NameReservations, resolveDestination, saveDownload, type Destination } from './save.ts';
import { unpackResult } from './unzip.ts';
import { MAX_API_WAIT_SECONDS, nextWait, waitForEnd } from './wait.ts';
import { describeError } from './report.ts';

export interface ConvertOptions {
  to: string;
  from?: string;
  option?: [string, string][];
  variant?: string;
  wait?: true | number;
  output?: string;
  callback?: string;
  idempotencyKey?: string;
  concurrency: number;
  /** A result that is a zip of several files (a split, every page) is unpacked into the -o directory. */
  unzip?: boolean;
}

interface Outcome {
  input: InputArg;
  conversion: PublicConversion | null;
  exit: ExitCode;
  path?: string | null;
}

const IDEMPOTENCY_KEY_MAX = 64;

/** `conv convert`: see commands/convert.ts for the options and what they mean. */
export async function runConvert(ctx: Context, inputArgs: string[], options: ConvertOptions): Promise<void> {
  const out = ctx.output;
  const inputs = await classifyInputs(inputArgs, ctx.io.cwd, options.from);
  if (inputs.some((input) => input.kind === 'stdin') && ctx.io.stdin.isTTY) {
    throw usageError('- reads the input from stdin, but stdin is a terminal: pipe a file in');
  }
  if (options.output === '-') {
    if (inputs.length > 1) throw usageError('-o - writes one result to stdout: give a single input, or -o <dir>');
    if (out.mode.json) throw usageError('--json and -o - both want stdout: choose one');
  }
  // In-process, nothing outlives the command: a result not written now would be lost, so it
  // goes to the current directory unless -o says otherwise.
  const output = options.output ?? (ctx.isLocal() ? '.' : undefined);
  const destination = output !== undefined ? await resolveDestination(output, ctx.io.cwd) : null;
  if (destination?.kind === 'file' && inputs.length > 1) {
    throw usageError(`-o ${options.output}: with several inputs, -o must be a directory (end it with / to create it)`);
  }
  if (options.unzip && destination?.kind !== 'dir') throw usageError('--unzip unpacks a zip result into a directory: give -o <dir> (end it with / to create it)');
  const keys = idempotencyKeys(options.idempotencyKey, inputs.length);
  const waitSeconds = options.wait === true ? Infinity : options.wait ?? (destination ? Infinity : null);

  const client = await ctx.client({ allowLocal: true, localWorkers: options.concurrency });
  const { typed: typedOptions, attachments } = await checkAllOptions(client, inputs, options, ctx.io.cwd);

  const progress = waitSeconds !== null ? createProgress(ctx.io.stderr, inputs.length, out.mode.quiet) : null;
  const deadline = waitSeconds === null ? null : Date.now() + waitSeconds * 1000;
  const names = new NameReservations();
  keepInputs(inputs, destination, names, options.output);
  // Lines for people go to stderr when stdout carries the file.
  const say = (text: string) => {
    progress?.clear();
    if (destination?.kind === 'stdout') out.note(text);
    else out.line(text);
  };

  // In-process the service runs `-j` conversions at once, and as many more wait in its queue: a
  // worker that frees up starts the next one at once, instead of when this loop has saved the
  // last result and submitted another. A daemon has a queue of its own (and the plan's limit on
  // conversions at once): it gets `-j` at a time.
  const inFlight = ctx.isLocal() ? options.concurrency * 2 : options.concurrency;
  const outcomes = await mapConcurrent(inputs, inFlight, async (input, index): Promise<Outcome> => {
    let conversion: PublicConversion | null = null;
    try {
      const request: CreateConversionRequest = {
        input: toInputSpec(input, ctx.io.stdin),
        target: options.to,
        ...(options.from !== undefined && { source: options.from }),
        ...(options.variant !== undefined && { variant: options.variant }),
        ...(typedOptions.get(index) && { options: typedOptions.get(index) }),
        ...(attachments.get(index)?.length && { attachments: attachments.get(index) }),
        ...(options.callback !== undefined && { callbackUrl: options.callback }),
        ...(keys[index] !== undefined && { idempotencyKey: keys[index] }),
        // Held only when someone waits and no bar wants early numbers.
        ...(deadline !== null && { wait: progress || waitSeconds === 0 ? 0 : nextWait(deadline, MAX_API_WAIT_SECONDS, Date.now()) }),
      };
      conversion = await client.createConversion(request);
      const update = (c: PublicConversion) => progress?.update(index, { name: input.name, status: c.status, progress: c.progress });
      update(conversion);
      if (deadline === null) {
        reportSubmitted(ctx, conversion, input, say);
        return { input, conversion, exit: EXIT.ok };
      }
      const waited = await waitForEnd(client, conversion, { deadline, pollSeconds: progress ? 1 : MAX_API_WAIT_SECONDS, onUpdate: update });
      conversion = waited.conversion;
      if (waited.timedOut) {
        progress?.clear();
        out.error('wait_timeout', `${input.name}: ${conversion.id} is still ${conversion.status} after ${formatSeconds(waitSeconds!)}`, `follow it with \`conv get ${conversion.id}\``);
        return { input, conversion, exit: EXIT.waitTimeout };
      }
      const exit = exitCodeForStatus(conversion.status);
      if (exit !== EXIT.ok) {
        progress?.clear();
        const reason = conversion.error ?? { code: conversion.status, message: `the conversion was ${conversion.status}` };
        out.error(reason.code, `${input.name}: ${reason.message} (${conversion.id})`);
        return { input, conversion, exit };
      }
      let path: string | null | undefined;
      if (destination) {
        const download = await client.download(conversion.id);
        const name = destination.kind === 'dir' ? names.reserve(download.filename) : download.filename;
        path = await saveDownload(download, destination, ctx.io.stdout, name);
        let unpacked: string[] | undefined;
        if (options.unzip && path && conversion.result?.mime === 'application/zip' && destination.kind === 'dir') {
          unpacked = await unpackResult(path, destination.path, names);
          path = destination.path;
        }
        progress?.update(index, { name: input.name, status: 'done', progress: 100 });
        if (unpacked) {
          reportUnpacked(ctx, conversion, input, unpacked, say);
          return { input, conversion, exit: EXIT.ok, path };
        }
      }
      reportFinished(ctx, conversion, input, path ?? null, destination, say);
      return { input, conversion, exit: EXIT.ok, path };
    } catch (error) {
      progress?.clear();
      const { code, message, hint, exit } = describeError(error);
      out.error(code, `${input.name}: ${message}`, hint);
      return { input, conversion, exit };
    }
  });
  progress?.clear();

  if (out.mode.json) {
    const local = ctx.isLocal();
    const conversions = outcomes
      .filter((o): o is Outcome & { conversion: PublicConversion } => o.conversion !== null)
      .map((o) => conversionJson(o.conversion, { local, savedTo: o.path }));
    if (inputs.length === 1) {
      if (conversions[0]) out.json(conversions[0]);
    } else {
      out.json(conversions);
    }
  }
  const failed = outcomes.find((o) => o.exit !== EXIT.ok);
  if (failed) ctx.fail(failed.exit);
}

/**
 * A result never replaces its own input: `-o` naming an input is refused, and in a directory that
 * holds inputs their names are taken (a.pdf -> pdf becomes a-1.pdf beside it, not a.pdf).
 */
function keepInputs(inputs: readonly InputArg[], destination: Destination | null, names: NameReservations, output: string | undefined): void {
  const files = inputs.filter((input): input is Extract<InputArg, { kind: 'file' }> => input.kind === 'file').map((input) => resolve(input.path));
  if (destination?.kind === 'file' && files.includes(destination.path)) {
    throw usageError(`-o ${output}: that is an input; write the result elsewhere`);
  }
  if (destination?.kind === 'dir') for (const file of files) if (dirname(file) === destination.path) names.reserve(basename(file));
}

function idempotencyKeys(key: string | undefined, count: number): (string | undefined)[] {
  if (key === undefined) return new Array<undefined>(count).fill(undefined);
  const keys = count === 1 ? [key] : Array.from({ length: count }, (_, i) => `${key}-${i + 1}`);
  const longest = keys.reduce((max, k) => Math.max(max, k.length), 0);
  if (longest > IDEMPOTENCY_KEY_MAX) throw usageError(`--idempotency-key: at most ${IDEMPOTENCY_KEY_MAX} characters${count > 1 ? ' including the -N suffix' : ''}`);
  return keys;
}

/**
 * One format lookup per distinct source, before any upload. A source the server does not know
 * by that name (404) is left to the server to judge; every other failure stops the run.
 */
async function checkAllOptions(
  client: ConvClient, inputs: InputArg[], options: ConvertOptions, cwd: string,
): Promise<{ typed: Map<number, ConversionOptions>; attachments: Map<number, AttachedFile[]> }> {
  const raw = options.option ?? [];
  const typed = new Map<number, ConversionOptions>();
  const attachments = new Map<number, AttachedFile[]>();
  const bySource = new Map<string, Promise<{ options: ConversionOptions | null; attachments: AttachedFile[] } | null>>();
  await Promise.all(inputs.map(async (input, index) => {
    const source = (options.from ?? extensionOf(input.name))?.toLowerCase();
    let checked: { options: ConversionOptions | null; attachments: AttachedFile[] } | null = null;
    if (source) {
      let pending = bySource.get(source);
      if (!pending) {
        pending = client.getFormat(source).then(
          async (details) => {
            // An option that names a file (watermark_image) is given a path here: the file goes with the input.
            const files = await attachFiles(details, options.to, raw, cwd);
            return { options: checkOptions(details, options.to, files.raw, options.variant), attachments: files.attachments };
          },
          (error: unknown) => {
            if (error instanceof ClientError && error.status === 404) return null;
            throw error;
          },
        );
        bySource.set(source, pending);
      }
      checked = await pending;
    }
    // Unchecked options go as given; the server validates them.
    const value = checked?.options ?? (raw.length ? Object.fromEntries(raw) : null);
    if (value && Object.keys(value).length > 0) typed.set(index, value);
    if (checked?.attachments.length) attachments.set(index, checked.attachments);
  }));
  return { typed, attachments };
}

function formatSeconds(value: number): string {
  return `${Number.isInteger(value) ? value : value.toFixed(1)} s`;
}

function reportSubmitted(ctx: Context, conversion: PublicConversion, input: InputArg, say: (text: string) => void): void {
  const out = ctx.output;
  if (out.mode.json) return;
  if (out.mode.quiet) return out.essential(conversion.id);
  say(`${conversion.id} ${colorStatus(conversion.status, out.out)} ${input.name} → ${conversion.target}`);
}

function reportFinished(
  ctx: Context,
  conversion: PublicConversion,
  input: InputArg,
  path: string | null,
  destination: Destination | null,
  say: (text: string) => void,
): void {
  const out = ctx.output;
  if (out.mode.json) return;
  // Said even under --quiet, on stderr: the file is there, but not as its author saw it.
  for (const warning of conversion.warnings ?? []) out.warn(`${input.name}: ${warning.message}`);
  if (out.mode.quiet) return;
  const size = formatBytes(conversion.result?.size);
  if (destination?.kind === 'stdout') return say(`${input.name} → stdout (${size}) ${out.err.dim(conversion.id)}`);
  if (path) return say(`${input.name} → ${path} (${size}) ${out.out.dim(conversion.id)}`);
  say(`${conversion.id} ${colorStatus(conversion.status, out.out)} ${input.name} → ${conversion.result?.filename ?? conversion.target} (${size})`);
}

function reportUnpacked(ctx: Context, conversion: PublicConversion, input: InputArg, files: string[], say: (text: string) => void): void {
  const out = ctx.output;
  if (out.mode.json) return;
  for (const warning of conversion.warnings ?? []) out.warn(`${input.name}: ${warning.message}`);
  if (out.mode.quiet) return;
  const shown = files.length <= 3 ? files.join(', ') : `${files.slice(0, 2).join(', ')}, … ${files.at(-1)!}`;
  say(`${input.name} → ${files.length} file${files.length === 1 ? '' : 's'}: ${shown} ${out.out.dim(conversion.id)}`);
}
