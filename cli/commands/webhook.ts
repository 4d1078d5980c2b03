import { readFile } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import type { Command } from 'commander';
import { examples, integerIn } from '../args.ts';
import type { Context } from '../context.ts';
import { CliError, usageError } from '../errors.ts';
import { EXIT } from '../exit-codes.ts';

interface VerifyOptions {
  secret?: string;
  signature: string;
  tolerance: number;
}

const REASONS: Record<string, string> = {
  malformed_header: 'the signature header is not of the form t=<unix time>,v1=<hex>',
  bad_signature: 'the signature does not match the body and secret',
  stale_timestamp: 'the signature is valid but its timestamp is too old (a replay?)',
  future_timestamp: 'the signature is valid but its timestamp lies too far in the future (check the clocks)',
};

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
      const { verifyWebhook } = await import('../../src/webhooks/signature.ts');
      const result = verifyWebhook(body, options.signature, secret, { toleranceSeconds: options.tolerance });
      const out = ctx.output;
      if (result.ok) {
        if (out.mode.json) out.json({ valid: true, timestamp: result.timestamp });
        else out.line(`valid: signed at ${new Date(result.timestamp * 1000).toISOString()}`);
        return;
      }
      if (out.mode.json) out.json({ valid: false, reason: result.reason });
      throw new CliError(EXIT.error, result.reason, REASONS[result.reason] ?? result.reason);
    });
}
