import { ALL_SETTINGS, type Setting } from './config-settings.ts';
import type { LoadedConfig, Source } from './config-load.ts';

const MASK = '********';

/** Secrets never leave the process: tokens entirely, URLs only their password. */
function masked(setting: Setting, raw: unknown): unknown {
  const value = raw !== undefined && setting.kind.format ? setting.kind.format(raw) : raw;
  if (!setting.secret || value === undefined) return value;
  if (typeof value === 'string' && /^https?:\/\//.test(value)) {
    const url = new URL(value);
    if (url.password === '' && url.username === '') return value;
    if (url.password !== '') url.password = MASK;
    else url.username = MASK;
    return url.toString();
  }
  return MASK;
}

function nest(target: Record<string, unknown>, key: string, value: unknown): void {
  const parts = key.split('.');
  let node = target;
  for (const part of parts.slice(0, -1)) node = (node[part] ??= {}) as Record<string, unknown>;
  node[parts[parts.length - 1]!] = value;
}

/**
 * `convd config print --json`: `settings` has the shape of a config file (it can be saved as
 * one, secrets aside), `sources` says where each value came from.
 */
export function configAsJson(loaded: LoadedConfig): { config_file: string | null; settings: Record<string, unknown>; sources: Record<string, Source> } {
  const settings: Record<string, unknown> = {};
  const sources: Record<string, Source> = {};
  for (const setting of ALL_SETTINGS) {
    const entry = loaded.values.get(setting.key);
    if (!entry) continue;
    nest(settings, setting.key, masked(setting, entry.value));
    sources[setting.key] = entry.source;
  }
  return { config_file: loaded.config.configFile, settings, sources };
}

/** `convd config print`: one line per setting, `key = value  (source)`; unset ones say so. */
export function configAsText(loaded: LoadedConfig): string {
  const rows = ALL_SETTINGS.map((setting) => {
    const entry = loaded.values.get(setting.key);
    const value = entry ? masked(setting, entry.value) : undefined;
    const shown = value === undefined ? '(unset)' : typeof value === 'string' ? value : JSON.stringify(value);
    const reload = setting.reloadable ? '' : '  [restart]';
    return [setting.key, shown, entry ? `${entry.source}${entry.source === 'env' ? ` ${setting.env}` : ''}` : '', reload] as const;
  });
  const keyWidth = Math.max(...rows.map((r) => r[0].length));
  const valueWidth = Math.min(48, Math.max(...rows.map((r) => r[1].length)));
  const head = `# config file: ${loaded.config.configFile ?? '(none)'}\n# precedence: flag > env > file > default; [restart]: not applied by SIGHUP\n`;
  return head + rows.map(([key, value, source, reload]) => `${key.padEnd(keyWidth)} = ${value.padEnd(valueWidth)}  (${source || 'unset'})${reload}`).join('\n');
}
