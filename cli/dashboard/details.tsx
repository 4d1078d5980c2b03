import { Box, Text } from 'ink';
import type { PublicConversion } from '../../src/model/conversion.ts';
import { formatBytes } from '../render.ts';
import { progressBar, statusColor } from './model.ts';

interface Props {
  conversion: PublicConversion;
  color: boolean;
}

/** Everything about one conversion (enter on the list; esc goes back). */
export function Details({ conversion: c, color }: Props) {
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
  const width = Math.max(...rows.map(([label]) => label.length), 'status'.length);
  return (
    <Box flexDirection="column" borderStyle="round" paddingX={1}>
      <Text bold>{c.id}</Text>
      <Text>
        <Text dimColor>{'status'.padEnd(width)}</Text>  <Text color={color ? statusColor(c.status) : undefined}>{c.status}</Text>
        {c.status === 'processing' ? ` ${progressBar(c.progress, 20)} ${c.progress ?? 0}%` : ''}
      </Text>
      {rows.map(([label, value]) => (
        <Text key={label} wrap="truncate-end">
          <Text dimColor>{label.padEnd(width)}</Text>  {value}
        </Text>
      ))}
      {c.error ? (
        <Text color={color ? 'red' : undefined}>
          <Text dimColor>{'error'.padEnd(width)}</Text>  {c.error.code}: {c.error.message}
        </Text>
      ) : null}
    </Box>
  );
}
