import { Box, Text } from 'ink';
import type { PublicConversion } from '../../src/model/conversion.ts';
import { formatBytes } from '../render.ts';
import { progressBar, shortTime, statusColor } from './model.ts';

interface Props {
  conversions: PublicConversion[];
  selected: number;
  color: boolean;
}

const BAR_WIDTH = 10;

function StatusCell({ conversion, color }: { conversion: PublicConversion; color: boolean }) {
  const status = conversion.status.padEnd(10);
  const tint = color ? statusColor(conversion.status) : undefined;
  if (conversion.status === 'processing' || conversion.status === 'fetching') {
    const percent = conversion.progress;
    return (
      <Text>
        <Text color={tint}>{status}</Text> {progressBar(percent, BAR_WIDTH)} {percent === null ? '  ?' : String(percent).padStart(3)}%
      </Text>
    );
  }
  return <Text color={tint}>{status.padEnd(10 + BAR_WIDTH + 6)}</Text>;
}

/** One line per conversion, newest first; the selected one marked with ›. */
export function ConversionList({ conversions, selected, color }: Props) {
  if (conversions.length === 0) return <Text dimColor>no conversions</Text>;
  return (
    <Box flexDirection="column">
      <Text bold wrap="truncate">
        {'  '}
        {'ID'.padEnd(31)} {'STATUS'.padEnd(10 + BAR_WIDTH + 6)} {'CONVERSION'.padEnd(14)} {'SIZE'.padEnd(9)} {'CREATED'.padEnd(12)} NAME
      </Text>
      {conversions.map((conversion, index) => {
        const mark = index === selected;
        return (
          <Text key={conversion.id} wrap="truncate" inverse={mark && color}>
            {mark ? '› ' : '  '}
            {conversion.id.padEnd(31)} <StatusCell conversion={conversion} color={color} />{' '}
            {`${conversion.source}→${conversion.target}`.padEnd(14)} {formatBytes(conversion.result?.size ?? conversion.input_size).padEnd(9)}{' '}
            {shortTime(conversion.created_at).padEnd(12)} {conversion.original_name}
          </Text>
        );
      })}
    </Box>
  );
}
