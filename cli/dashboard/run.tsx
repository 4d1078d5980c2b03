import { render } from 'ink';
import type { ConvClient } from '../../src/client/types.ts';
import { onStopRequest } from '../interrupt.ts';
import { Dashboard } from './dashboard.tsx';

export interface DashboardRun {
  client: ConvClient;
  server: string;
  cwd: string;
  color: boolean;
  /** A terminal: ink draws frames on it and reads keys in raw mode. */
  stdout: NodeJS.WriteStream;
  stdin: NodeJS.ReadStream;
  stderr: NodeJS.WriteStream;
  pollMs?: number;
}

/**
 * Draws the dashboard until `q` (or Ctrl-C, which ink reads as a key in raw mode; SIGTERM comes
 * through interrupt.ts). The caller has made sure both ends are a terminal: ink writes ANSI
 * frames wherever it is pointed, and `useInput` throws on a stdin without raw mode.
 */
export async function runDashboard(options: DashboardRun): Promise<void> {
  const instance = render(
    <Dashboard client={options.client} server={options.server} cwd={options.cwd} color={options.color} pollMs={options.pollMs} />,
    { stdout: options.stdout, stdin: options.stdin, stderr: options.stderr, exitOnCtrlC: true, patchConsole: false },
  );
  const unregister = onStopRequest(() => instance.unmount());
  try {
    await instance.waitUntilExit();
  } finally {
    unregister();
  }
}
