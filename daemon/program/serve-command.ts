import type { Command } from 'commander';
import { addSettingOptions, loadConfigOrExit } from './setting-options.ts';

/** The end of `convd serve --help`; its list of what SIGHUP reloads is checked against daemon/reloaders.ts. */
export const SERVE_HELP = `
Precedence: flag > CONVD_* environment variable > config file > default. Every setting of the
config file is listed by \`convd config print\`; plans, credit weights and engine time limits
are nested objects there (plans.free.max_upload_mb), CONVD_PLAN_FREE_MAX_UPLOAD_MB in the
environment. An invalid value stops the start with a message naming it (exit 2).

Endpoints besides /v1: GET /healthz (liveness), GET /readyz (store writable, disk above the
floor, engines present), GET /metrics (Prometheus; on --metrics-listen instead when set; with a
--host beyond loopback only with --metrics-token),
GET /v1/openapi.json (the interface, no key needed).

Signals: SIGTERM/SIGINT stop gracefully (requests in flight and running conversions get
--drain-timeout, what still runs is re-queued; a second signal exits at once); SIGHUP reloads
the config file: plans, credit weights, engine time limits, output caps, retention, log level
and format, disk floor, body time limits, trusted proxy, public URL, metrics token, failed
authentications per minute, TLS certificate, drain timeout. Host, port, data dir, workers,
metrics address, allow-* switches, the sweep interval, the engine memory and the input caps
need a restart.

On first start with an empty store an unmetered account and one API key are created. The key
is shown once on stderr when that is a terminal; otherwise it is written to
DATA_DIR/first-api-key (mode 0600) and the log names that file, never the key.`;

export function registerServe(program: Command): void {
  addSettingOptions(program
    .command('serve', { isDefault: true })
    .description('run the daemon (the default command)'))
    .addHelpText('after', SERVE_HELP)
    .action(async (options: Record<string, unknown>) => {
      const result = await loadConfigOrExit(options);
      if (!result) return;
      const { serve } = await import('../serve-process.ts');
      await serve(result.loaded, result.input);
    });
}
