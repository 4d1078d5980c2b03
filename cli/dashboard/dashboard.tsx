import { Box, Text, useApp, useInput, useStdout, type Key } from 'ink';
import { useCallback, useEffect, useRef, useState } from 'react';
import type { AccountView, ConvClient } from '../../src/client/types.ts';
import type { PublicConversion } from '../../src/model/conversion.ts';
import { ACTIVE_STATUSES } from '../../src/model/status.ts';
import { formatBytes } from '../render.ts';
import { describeError } from '../report.ts';
import { saveDownload } from '../save.ts';
import { AccountPanel } from './account-panel.tsx';
import { ConversionList } from './conversion-list.tsx';
import { Details } from './details.tsx';
import { FILTER_KEYS, filterLabel, FILTERS, pollInterval, stepFilter, type Filter } from './model.ts';

export interface DashboardProps {
  client: ConvClient;
  /** The server's base URL, shown in the header. */
  server: string;
  /** Where `d` saves results. */
  cwd: string;
  color: boolean;
  /** Fixed time between polls (tests); by default about 1 s, within the account's rate limit. */
  pollMs?: number;
}

interface Message {
  text: string;
  error: boolean;
}

/**
 * Lines besides the list: account box (4), filters, list header, error, message, help (9), and
 * one spare: ink clears the whole screen on every frame once its output fills the terminal.
 */
const CHROME_LINES = 10;

const HELP = '↑/↓ select · enter details · x cancel · d download · a/u/p/s/f/c or ←/→ filter · r refresh · q quit';

export function Dashboard({ client, server, cwd, color, pollMs }: DashboardProps) {
  const { exit } = useApp();
  const { stdout } = useStdout();
  const [filter, setFilter] = useState<Filter>(null);
  const [conversions, setConversions] = useState<PublicConversion[] | null>(null);
  const [account, setAccount] = useState<AccountView | null>(null);
  const [pollError, setPollError] = useState<string | null>(null);
  // The selection is a conversion, not a row: it stays on it while the list moves under it.
  const [selectedId, setSelectedId] = useState<string | null>(null);
  const lastIndex = useRef(0);
  const [detailId, setDetailId] = useState<string | null>(null);
  const lastDetail = useRef<PublicConversion | null>(null);
  const [message, setMessage] = useState<Message | null>(null);
  const [refresh, setRefresh] = useState(0);

  const limit = Math.max(5, Math.min(100, (stdout.rows || 24) - CHROME_LINES));
  const interval = pollMs ?? pollInterval(account?.limits.requests_per_minute);

  useEffect(() => {
    let stopped = false;
    let timer: NodeJS.Timeout | undefined;
    const tick = async () => {
      try {
        const [page, view] = await Promise.all([
          client.listConversions({ status: filter ?? undefined, limit }),
          client.getAccount(),
        ]);
        if (stopped) return;
        setConversions(page.data);
        setAccount(view);
        setPollError(null);
      } catch (error) {
        if (stopped) return;
        const report = describeError(error);
        setPollError(`${report.code}: ${report.message}`);
      }
      if (!stopped) timer = setTimeout(() => void tick(), interval);
    };
    void tick();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [client, filter, limit, interval, refresh]);

  const found = conversions && selectedId !== null ? conversions.findIndex((c) => c.id === selectedId) : -1;
  // Gone from the list (cancelled under a filter, say): the row where it was.
  const selected = conversions?.length ? (found >= 0 ? found : Math.min(lastIndex.current, conversions.length - 1)) : 0;
  lastIndex.current = selected;
  const current = conversions?.[selected] ?? null;
  // The details follow the list's fresh copy; the last one seen if it left the list.
  const detail = detailId === null ? null : conversions?.find((c) => c.id === detailId) ?? lastDetail.current;
  lastDetail.current = detail;

  // Relative to the selection as updated so far: two keys read in one chunk move two rows.
  const move = (step: number) => {
    if (!conversions || conversions.length === 0) return;
    setSelectedId((previous) => {
      const at = previous === null ? -1 : conversions.findIndex((c) => c.id === previous);
      const from = at >= 0 ? at : Math.min(lastIndex.current, conversions.length - 1);
      return conversions[Math.max(0, Math.min(conversions.length - 1, from + step))]!.id;
    });
  };

  const changeFilter = (next: Filter) => {
    setDetailId(null);
    if (next === filter) return setRefresh((n) => n + 1);
    setConversions(null);
    setSelectedId(null);
    lastIndex.current = 0;
    setFilter(next);
  };

  const cancel = useCallback(async (target: PublicConversion) => {
    setMessage({ text: `cancelling ${target.id}…`, error: false });
    try {
      // DELETE on a finished conversion would delete its result: look first.
      const fresh = await client.getConversion(target.id);
      if (!ACTIVE_STATUSES.has(fresh.status)) {
        setMessage({ text: `${target.id} is ${fresh.status}: only active conversions can be cancelled`, error: true });
        return;
      }
      const cancelled = await client.deleteConversion(target.id);
      setMessage({ text: `${cancelled.id} ${cancelled.status}`, error: false });
    } catch (error) {
      const report = describeError(error);
      setMessage({ text: `${report.code}: ${report.message}`, error: true });
    }
    setRefresh((n) => n + 1);
  }, [client]);

  const download = useCallback(async (target: PublicConversion) => {
    if (target.status !== 'succeeded') {
      setMessage({ text: `${target.id} is ${target.status}: only a succeeded conversion has a result`, error: true });
      return;
    }
    setMessage({ text: `downloading ${target.result?.filename ?? target.id}…`, error: false });
    try {
      const result = await client.download(target.id);
      const path = await saveDownload(result, { kind: 'dir', path: cwd }, process.stdout);
      setMessage({ text: `saved ${path} (${formatBytes(result.size)})`, error: false });
    } catch (error) {
      const report = describeError(error);
      setMessage({ text: `${report.code}: ${report.message}`, error: true });
    }
  }, [client, cwd]);

  // ink swaps a new handler in only after the next commit; keys read before that would reach
  // the previous render's state. One stable handler calling the latest render's logic instead.
  const onKey = useRef<(input: string, key: Key) => void>(() => undefined);
  onKey.current = (input, key) => {
    if (input === 'q') return exit();
    if (detail) {
      if (key.escape || key.backspace || key.delete || key.leftArrow || key.return) return setDetailId(null);
    } else if (key.return) {
      if (current) setDetailId(current.id);
      return;
    } else if (key.leftArrow) {
      return changeFilter(stepFilter(filter, -1));
    } else if (key.rightArrow || key.tab) {
      return changeFilter(stepFilter(filter, 1));
    }
    if (key.upArrow || input === 'k') return move(-1);
    if (key.downArrow || input === 'j') return move(1);
    if (input in FILTER_KEYS) return changeFilter(FILTER_KEYS[input]!);
    if (input === 'r') return setRefresh((n) => n + 1);
    const target = detail ?? current;
    if (input === 'x' && target) return void cancel(target);
    if (input === 'd' && target) return void download(target);
  };
  useInput(useCallback((input: string, key: Key) => onKey.current(input, key), []));

  return (
    <Box flexDirection="column">
      <AccountPanel account={account} server={server} color={color} />
      <Text wrap="truncate">
        {FILTERS.map((f) => {
          const label = filterLabel(f);
          return f === filter ? (
            <Text key={label} bold inverse={color}>{` ${label} `}</Text>
          ) : (
            <Text key={label} dimColor>{` ${label} `}</Text>
          );
        })}
        {conversions ? <Text dimColor>{` ${conversions.length} shown`}</Text> : null}
      </Text>
      {detail ? (
        <Details conversion={detail} color={color} />
      ) : conversions ? (
        <ConversionList conversions={conversions} selected={selected} color={color} />
      ) : (
        <Text dimColor>loading…</Text>
      )}
      {pollError ? <Text color={color ? 'red' : undefined} wrap="truncate">{`cannot reach convd: ${pollError}`}</Text> : null}
      {message ? <Text color={color && message.error ? 'red' : undefined} wrap="truncate">{message.text}</Text> : null}
      <Text dimColor wrap="truncate">{HELP}</Text>
    </Box>
  );
}
