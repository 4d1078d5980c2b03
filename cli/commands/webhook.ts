import { readFile } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import type { Command } from 'commander';
import { examples, integerIn } from '../args.ts';
import type { PublicConversion } from '../../src/model/conversion.ts';
import type { Colors } from '../colors.ts';
import type { Context } from '../context.ts';
import { CliError, usageError } from '../errors.ts';
import { EXIT } from '../exit-codes.ts';
import { untilStopRequested } from '../interrupt.ts';
import type { DeliveryReport } from '../webhook-receiver.ts';

interface VerifyOptions {
  secret?: string;
  signature: string;
  tolerance: number;
}

interface ListenOptions {
  port: number;
  secret?: string;
  forward?: string;
  tolerance: number;
}

const DEFAULT_LISTEN_PORT = 7701;

async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer));
  return Buffer.concat(chunks);
}

export function registerWebhook(program: Command, ctx: Context): void {
  const webhook = program
    .command('webhook')
    .description('tools for receiving convd webhooks')
    .addHelpText('after', examples([
      ['conv webhook verify --secret "$SECRET" --signature "$SIG" body.json', 'check a delivery\'s signature'],
      ['conv webhook listen --secret "$SECRET"', 'receive, verify and print deliveries on 127.0.0.1:7701'],
    ]));

  webhook
    .command('verify')
    .description('check the X-Service-Signature of a webhook delivery against its raw body')
    .argument('[file]', 'the raw request body, byte for byte; - or nothing reads stdin')
    .option('--secret <secret>', 'the account\'s webhook secret (default: CONV_WEBHOOK_SECRET)')
    .requiredOption('--signature <header>', 'the X-Service-Signature header value: t=<unix time>,v1=<hex>')
    .option('--tolerance <seconds>', 'largest accepted age of the timestamp', integerIn(1, 31_536_000), 300)
    .addHelpText('after', `
Exit 0 when the delivery is authentic and fresh; 1 with the reason otherwise (malformed_header,
bad_signature, stale_timestamp, future_timestamp). With --json, prints
{"valid": true, "timestamp": …} or {"valid": false, "reason": …}.
${examples([
  ['conv webhook verify --secret "$SECRET" --signature "$SIG" body.json', 'verify a saved delivery'],
  ['cat body.json | conv webhook verify --secret "$SECRET" --signature "t=1700000000,v1=5f…"', 'body from stdin'],
])}`)
    .action(async (file: string | undefined, options: VerifyOptions) => {
      const secret = options.secret ?? ctx.io.env.CONV_WEBHOOK_SECRET;
      if (!secret) throw usageError('a webhook secret is needed: --secret or CONV_WEBHOOK_SECRET', 'print it with `convd webhook-secret --account acc_…`');
      if ((file === undefined || file === '-') && ctx.io.stdin.isTTY) {
        throw usageError('no body: pass the file holding the raw request body, or pipe it on stdin');
      }
      let body: Buffer;
      try {
        body = file === undefined || file === '-' ? await readAll(ctx.io.stdin) : await readFile(file);
      } catch (error) {
        throw usageError(`cannot read ${file}: ${(error as Error).message}`);
      }
      const [{ verifyWebhook }, { WEBHOOK_REJECTIONS }] = await Promise.all([import('../../src/webhooks/index.ts'), import('../webhook-reasons.ts')]);
      const result = verifyWebhook(body, options.signature, secret, { toleranceSeconds: options.tolerance });
      const out = ctx.output;
      if (result.ok) {
        if (out.mode.json) out.json({ valid: true, timestamp: result.timestamp });
        else out.line(`valid: signed at ${new Date(result.timestamp * 1000).toISOString()}`);
        return;
      }
      if (out.mode.json) out.json({ valid: false, reason: result.reason });
      throw new CliError(EXIT.error, result.reason, WEBHOOK_REJECTIONS[result.reason] ?? result.reason);
    });

  webhook
    .command('listen')
    .description('receive webhooks on 127.0.0.1: verify each delivery, print it, answer 2xx (400 with the reason when invalid)')
    .option('-p, --port <port>', 'port on 127.0.0.1 (0: any free port)', integerIn(0, 65535), DEFAULT_LISTEN_PORT)
    .option('--secret <secret>', 'the account\'s webhook secret (default: CONV_WEBHOOK_SECRET)')
    .option('--forward <url>', 'pass each verified delivery on to this URL (raw body and X-Service-* headers) and relay its answer')
    .option('--tolerance <seconds>', 'largest accepted age of the signature timestamp', integerIn(1, 31_536_000), 300)
    .addHelpText('after', `
Every POST is checked like a receiver must (signature over the raw body, timestamp younger than
--tolerance). A valid delivery is answered 200 {"received": true} and printed: one line per
delivery, or with --json the delivered body, one per line (NDJSON of {"event", "data"}). An
invalid one is answered 400 {"error": {"code", "message"}} (malformed_header, bad_signature,
stale_timestamp, future_timestamp, malformed_body; 413 body_too_large) and reported on stderr.
A retry of a delivery (same X-Service-Delivery id) is answered and printed again, marked as a
repeat. With --forward, the answer is the forward target's own (502 forward_failed if it cannot
be reached within 10 s), so the sender's retries see what your application said.
convd delivers only to https URLs unless it runs with --allow-insecure-callbacks (local testing).
Ctrl-C (or SIGTERM) stops the receiver: exit 0.
${examples([
  ['conv webhook listen --secret "$(convd webhook-secret --account acc_… --json | jq -r .secret)"', 'on 127.0.0.1:7701'],
  ['conv convert a.png --to webp --callback http://127.0.0.1:7701/', 'then, with convd --allow-insecure-callbacks'],
  ['conv webhook listen --secret "$SECRET" --forward http://127.0.0.1:3000/hooks', 'verify, then hand on to your app'],
  ['conv webhook listen --secret "$SECRET" --port 0 --json | jq .data.status', 'NDJSON for scripts (any free port)'],
])}`)
    .action(async (options: ListenOptions) => {
      const secret = options.secret ?? ctx.io.env.CONV_WEBHOOK_SECRET;
      if (!secret) throw usageError('a webhook secret is needed: --secret or CONV_WEBHOOK_SECRET', 'print it with `convd webhook-secret --account acc_…`');
      if (options.forward !== undefined && !/^https?:\/\/[^/]/i.test(options.forward)) {
        throw usageError(`--forward ${options.forward}: must be an http(s) URL`);
      }
      const out = ctx.output;
      const [{ startWebhookReceiver }, { colorStatus }] = await Promise.all([import('../webhook-receiver.ts'), import('../render.ts')]);
      const stop = untilStopRequested();
      let receiver;
      try {
        receiver = await startWebhookReceiver(
          { port: options.port, secret, toleranceSeconds: options.tolerance, forward: options.forward },
          (report) => printDelivery(ctx, report, colorStatus),
        );
      } catch (error) {
        stop.cancel();
        if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') {
          throw new CliError(EXIT.error, 'address_in_use', `port ${options.port} on 127.0.0.1 is in use`, 'choose another with --port (0 picks a free one)');
        }
        throw error;
      }
      // On stderr, so stdout stays pure NDJSON with --json; always shown: it carries the URL.
      ctx.io.stderr.write(`listening on ${receiver.url}${options.forward ? `, forwarding to ${options.forward}` : ''} (Ctrl-C to stop)\n`);
      await stop.promise;
      await receiver.close();
      out.note('stopped');
    });
}

function clock(): string {
  return new Date().toTimeString().slice(0, 8);
}

function printDelivery(ctx: Context, report: DeliveryReport, colorStatus: (status: string, colors: Colors) => string): void {
  const out = ctx.output;
  if (!report.valid) {
    const what = report.delivery ? `delivery ${report.delivery}` : 'request';
    out.error(report.reason, `${what} from ${report.remote} rejected: ${report.message}`);
    return;
  }
  if (out.mode.json) return out.jsonLine(report.body);
  if (out.mode.quiet) return;
  const data = (report.body as { data?: Partial<PublicConversion> } | null)?.data;
  const event = report.event ?? (report.body as { event?: string } | null)?.event ?? 'event';
  const parts = [out.out.dim(clock()), out.out.bold(event)];
  if (data?.id) parts.push(data.id);
  if (data?.status) parts.push(colorStatus(data.status, out.out));
  if (data?.original_name) parts.push(`${data.original_name} → ${data.target ?? '?'}`);
  if (data?.error) parts.push(out.out.red(`${data.error.code}: ${data.error.message}`));
  parts.push(out.out.dim(`(delivery ${report.delivery ?? '?'}${report.repeat ? ', repeat' : ''})`));
  if (report.forward) {
    parts.push('status' in report.forward ? `→ forwarded: ${report.forward.status}` : out.out.red(`→ forward failed: ${report.forward.error}`));
  }
  out.line(parts.join(' '));
}
