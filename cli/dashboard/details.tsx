import { Box, Text } from 'ink';
import type { PublicConversion } from '../../src/model/conversion.ts';
import { conversionDetailRows } from '../render.ts';
import { progressBar, statusColor } from './model.ts';

interface Props {
  conversion: PublicConversion;
  color: boolean;
}

/** Everything about one conversion (enter on the list; esc goes back). */
export function Details({ conversion: c, color }: Props) {
  const rows = conversionDetailRows(c);
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
