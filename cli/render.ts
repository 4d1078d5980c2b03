import type { AccountView, FormatDetails, FormatListing } from '../src/client/types.ts';
import type { PublicConversion } from '../src/model/conversion.ts';
import type { Colors } from './colors.ts';
import { renderTable } from './output.ts';

/** Human renderings of the API objects (with --json the objects are printed unchanged instead). */

export function formatBytes(bytes: number | null | undefined): string {
  if (bytes === null || bytes === undefined) return '-';
  if (bytes < 1024) return `${bytes} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${value < 10 ? value.toFixed(1) : Math.round(value)} ${units[unit]}`;
}

export function colorStatus(status: string, colors: Colors): string {
  switch (status) {
    case 'succeeded':
      return colors.green(status);
    case 'failed':
      return colors.red(status);
    case 'cancelled':
    case 'expired':
      return colors.dim(status);
    default:
      return colors.yellow(status);
  }
}

function statusCell(conversion: PublicConversion, colors: Colors): string {
  const progress = conversion.status === 'processing' && conversion.progress !== null ? ` ${conversion.progress}%` : '';
  return colorStatus(conversion.status, colors) + progress;
}

export function conversionRows(conversions: PublicConversion[], colors: Colors): string[][] {
  return conversions.map((c) => [
    c.id,
    statusCell(c, colors),
    `${c.source} → ${c.target}`,
    c.original_name,
    formatBytes(c.result?.size ?? c.input_size),
    c.created_at,
  ]);
}

export const CONVERSION_HEADERS = ['ID', 'STATUS', 'CONVERSION', 'NAME', 'SIZE', 'CREATED'];

/** The labelled facts of one conversion, shared by `conv get` and the dashboard's details view. */
export function conversionDetailRows(c: PublicConversion): [string, string][] {
  const rows: [string, string][] = [
    ['conversion', `${c.source} → ${c.target}${c.variant ? ` (${c.variant})` : ''}`],
    ['name', c.original_name],
    ['input size', formatBytes(c.input_size)],
  ];
  const options = Object.entries(c.options);
  if (options.length > 0) rows.push(['options', options.map(([k, v]) => `${k}=${String(v)}`).join(' ')]);
  rows.push(['credits', String(c.credits)], ['created', c.created_at]);
  if (c.started_at) rows.push(['started', c.started_at]);
  if (c.finished_at) rows.push(['finished', c.finished_at]);
  if (c.result) {
    rows.push(
      ['result', `${c.result.filename} (${formatBytes(c.result.size)}, ${c.result.mime})`],
      ['expires', c.result.expires_at],
      ['download', c.result.download_url],
    );
  }
  for (const warning of c.warnings ?? []) rows.push(['warning', `${warning.code}: ${warning.message}`]);
  return rows;
}

export function renderConversion(c: PublicConversion, colors: Colors): string {
  const rows: [string, string][] = [['id', c.id], ['status', statusCell(c, colors)], ...conversionDetailRows(c)];
  if (c.error) rows.push(['error', colors.red(`${c.error.code}: ${c.error.message}`)]);
  const width = Math.max(...rows.map(([label]) => label.length));
  return `${rows.map(([label, value]) => `${colors.dim(label.padEnd(width))}  ${value}`).join('\n')}\n`;
}

export function renderAccount(account: AccountView, colors: Colors): string {
  const { plan, credits, limits } = account;
  const remaining = credits.remaining === null ? 'unlimited' : `${credits.remaining} of ${credits.monthly_allowance}`;
  const rows: [string, string][] = [
    ['plan', `${plan.name} (${plan.id})`],
    ['credits', `${remaining} (${credits.type})`],
  ];
  if (credits.resets_at) rows.push(['resets', credits.resets_at]);
  rows.push(
    ['active', `${limits.active_conversions} of ${limits.concurrent_conversions} concurrent conversions`],
    ['window', `${limits.conversions_per_window} conversions per ${limits.window_seconds / 60} min`],
    ['requests', `${limits.requests_per_minute} per minute`],
    ['max upload', `${limits.max_upload_mb} MB`],
    ['results kept', `${limits.result_ttl_hours} h`],
  );
  const time = account.engine_time;
  if (time && time.allowance_seconds > 0) rows.push(['engine time', `${time.remaining_seconds} of ${time.allowance_seconds} s left this hour (until ${time.resets_at})`]);
  const width = Math.max(...rows.map(([label]) => label.length));
  return `${rows.map(([label, value]) => `${colors.dim(label.padEnd(width))}  ${value}`).join('\n')}\n`;
}

export function renderFormatListing(listing: FormatListing, colors: Colors): string {
  return renderTable(['SOURCE', 'TARGETS'], listing.data.map((entry) => [entry.source, entry.targets.join(' ')]), colors);
}

export function renderFormatDetails(details: FormatDetails, colors: Colors): string {
  const rows = details.data.map((entry) => [
    entry.target,
    String(entry.credit_weight),
    String(entry.max_upload_mb),
    entry.options.map((o) => {
      const range = o.type === 'enum' ? `{${o.values.join(',')}}`
        : o.type === 'text' ? 'text'
          : o.min !== undefined || o.max !== undefined ? `[${o.min ?? ''}..${o.max ?? ''}]` : o.type;
      return `${o.name}=${range}`;
    }).join(' ') || '-',
    entry.variants.map((v) => v.key).join(' ') || '-',
  ]);
  return `${colors.bold(`${details.source} →`)}\n${renderTable(['TARGET', 'CREDITS', 'MAX MB', 'OPTIONS (-O name=value)', 'VARIANTS'], rows, colors)}`;
}
