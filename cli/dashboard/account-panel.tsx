import { Box, Text } from 'ink';
import type { AccountView } from '../../src/client/types.ts';

interface Props {
  account: AccountView | null;
  server: string;
  color: boolean;
}

/** The top of the dashboard: which server, the plan, credits and limits, active conversions. */
export function AccountPanel({ account, server, color }: Props) {
  if (!account) {
    return (
      <Box borderStyle="round" paddingX={1}>
        <Text>convd {server} · loading…</Text>
      </Box>
    );
  }
  const { plan, credits, limits } = account;
  const remaining = credits.remaining === null ? 'unlimited' : `${credits.remaining} of ${credits.monthly_allowance}`;
  const busy = limits.active_conversions >= limits.concurrent_conversions;
  return (
    <Box borderStyle="round" paddingX={1} flexDirection="column">
      <Text wrap="truncate">
        <Text bold>convd</Text> {server} · plan <Text bold>{plan.name}</Text> ({plan.id})
      </Text>
      <Text wrap="truncate">
        credits {remaining}{credits.resets_at ? ` (resets ${credits.resets_at.slice(0, 10)})` : ''} · active{' '}
        <Text color={color && busy ? 'yellow' : undefined} bold>
          {limits.active_conversions}
        </Text>
        /{limits.concurrent_conversions} · {limits.conversions_per_window} per {limits.window_seconds / 60} min ·{' '}
        {limits.requests_per_minute} req/min · max upload {limits.max_upload_mb} MB
      </Text>
    </Box>
  );
}
