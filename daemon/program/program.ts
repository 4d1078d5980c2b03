import { Command } from 'commander';
import { registerAccounts, registerDeliveries, registerKeys, registerMaintenance, registerWebhookSecret } from './admin-commands.ts';
import { registerConfig } from './config-command.ts';
import { registerDoctor } from './doctor-command.ts';
import { registerServe } from './serve-command.ts';
import { registerMigrate, registerStore } from './store-commands.ts';

const VERSION = '0.1.0';

/**
 * The `convd` program, its commands in the order `convd --help` lists them. Command modules
 * register options and help only; whatever is heavy (the daemon, the store, the engines) is
 * imported inside the action that needs it, so `convd --help` never loads it.
 */
export function buildProgram(): Command {
  const program = new Command('convd')
    .description('Self-hosted file conversion service: serves the /v1 HTTP interface and administers its accounts.')
    .version(VERSION)
    .showHelpAfterError()
    .addHelpText('after', `
Examples:
  convd                                   start on 127.0.0.1:7700 with data in ~/.local/share/convd
  convd serve --port 8080 --data-dir /var/lib/convd
  convd --config /etc/convd/convd.json    all settings from a file (flags and CONVD_* still win)
  convd config print --config /etc/convd/convd.json
  convd accounts create --plan free --name alice --json
  convd keys create --account acc_123 --scopes read,convert
  convd maintenance on --retry-after 600`);

  registerServe(program);
  registerConfig(program);
  registerDoctor(program);
  registerAccounts(program);
  registerKeys(program);
  registerWebhookSecret(program);
  registerDeliveries(program);
  registerStore(program);
  registerMigrate(program);
  registerMaintenance(program);
  return program;
}
