import { readFileSync } from 'node:fs';
import { ENGINE_NICENESS } from '../process/group.ts';
import type { SandboxPlan } from './sandbox.ts';

/**
 * Flags of every launch: no GPU, no background traffic of its own. Every request the
 * page makes goes to a proxy that is a black hole of convd's own (browser.ts): what convd does
 * not answer itself (request interception) reaches nothing, WebSockets and IP literals included.
 * WebRTC's UDP does not go through a proxy: the profile's preferences (BROWSER_PREFERENCES) keep
 * it on the proxy too. `--no-sandbox` only where Chromium's own sandbox cannot run (sandbox.ts).
 */
export function launchFlags(proxyPort: number, pageHeapMb: number, sandbox: SandboxPlan): string[] {
  return [
    ...(sandbox.on ? [] : ['--no-sandbox']),
    '--disable-gpu', '--disable-quic', '--no-first-run', '--no-default-browser-check',
    '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-domain-reliability',
    '--disable-breakpad', '--disable-client-side-phishing-detection', '--metrics-recording-only', '--mute-audio',
    '--disable-features=Translate,MediaRouter,OptimizationHints,AutofillServerCommunication,InterestFeedContentSuggestions',
    `--proxy-server=http://127.0.0.1:${proxyPort}`, '--proxy-bypass-list=<-loopback>',
    `--js-flags=--max-old-space-size=${pageHeapMb}`,
  ];
}

/**
 * The profile's preferences, written before Chromium starts. WebRTC sends UDP (STUN, TURN, data
 * channels) from the browser's network service straight to any host and port a page names, past
 * the proxy and the interception; `disable_non_proxied_udp` leaves it only TCP through the proxy,
 * which is the black hole. (The `--force-webrtc-ip-handling-policy` switch is read by renderers,
 * which the browser does not pass it to: measured, it let every packet through.) Every context
 * convd opens is an off-the-record child of this profile and reads the same preference.
 */
export const BROWSER_PREFERENCES = JSON.stringify({
  webrtc: { ip_handling_policy: 'disable_non_proxied_udp', multiple_routes_enabled: false, nonproxied_udp_enabled: false },
});

export interface WrapperPaths {
  executable: string;
  pidFile: string;
  /** The preferences file copied into the profile Playwright names with --user-data-dir. */
  preferences: string;
  /** Folders the browser's own user must own (its HOME, its TMPDIR), when it runs as another user. */
  ownDirs: readonly string[];
  /**
   * Where the script writes the profile Playwright made (its --user-data-dir): Playwright removes
   * it when the browser ends, but not when the daemon was killed; the next daemon reads it here.
   */
  profileRecord?: string;
}

/**
 * The shell script Playwright starts as "the browser": it records its pid (exec keeps it), takes
 * the OOM killer's first place and a lower priority, puts the preferences into the profile
 * Playwright made (and records where that is), and execs Chromium through setpriv: --pdeathsig
 * where there is one, and as the browser's own unprivileged user when the daemon runs as root
 * (sandbox.ts), after handing it the folders it writes to.
 *
 * The lower priority is two things. `nice` sets every thread's. And Playwright starts the browser
 * in a session of its own, which with Linux's autogroup scheduling is a scheduling group that
 * weighs as much as the daemon's whatever its threads' nice values: the script lowers that
 * group's (its own session's, which every process Chromium forks shares) before Chromium starts.
 * An unprivileged process may change one autogroup per tenth of a second, machine-wide: a change
 * refused for that (EAGAIN) is tried again, for two seconds at most. Where there is no writable
 * autogroup file (autogroup off, a read-only /proc) there is nothing to lower.
 *
 * A browser that would run as root (the daemon is root and the sandbox is off) goes without
 * CAP_SYS_NICE: with it, Chromium gives its threads the nice values of their kinds (measured: the
 * main thread -8, the others 0), above the daemon's. Without it, a thread may only lower its own
 * priority. As another user it has no capability at all.
 */
export function wrapperScript(paths: WrapperPaths, setpriv: string | null, sandbox: SandboxPlan, root: RootCapabilities = ownCapabilities()): string {
  const quote = (text: string) => `'${text.replace(/'/g, "'\\''")}'`;
  const runAs = sandbox.on && sandbox.runAs !== undefined ? sandbox.runAs : undefined;
  const owner = runAs === undefined ? '' : `; chown -R ${runAs}:${runAs} "$d"`;
  const record = paths.profileRecord === undefined ? '' : `printf '%s' "$d" > ${quote(paths.profileRecord)}; `;
  const setprivArgs = [
    ...(setpriv ? ['--pdeathsig', 'KILL'] : []),
    ...(runAs === undefined ? [] : [`--reuid=${runAs}`, `--regid=${runAs}`, '--clear-groups']),
    ...(runAs === undefined && root.mayRaisePriority && root.mayDropCapabilities ? ['--bounding-set=-sys_nice', '--inh-caps=-sys_nice'] : []),
  ];
  return [
    '#!/bin/sh',
    `echo $$ > ${quote(paths.pidFile)}`,
    'echo 1000 > /proc/self/oom_score_adj 2>/dev/null',
    'if [ -w /proc/self/autogroup ]; then',
    '  n=0',
    `  until { echo ${ENGINE_NICENESS} > /proc/self/autogroup; } 2>/dev/null; do n=$((n + 1)); [ $n -ge 20 ] && break; sleep 0.1; done`,
    'fi',
    'for a in "$@"; do',
    `  case "$a" in --user-data-dir=*) d="\${a#--user-data-dir=}"; ${record}mkdir -p "$d/Default" && cp ${quote(paths.preferences)} "$d/Default/Preferences"${owner};; esac`,
    'done',
    ...(runAs === undefined ? [] : paths.ownDirs.map((dir) => `chown -R ${runAs}:${runAs} ${quote(dir)}`)),
    `exec ${setpriv && setprivArgs.length > 0 ? `${quote(setpriv)} ${setprivArgs.join(' ')} -- ` : ''}nice -n ${ENGINE_NICENESS} ${quote(paths.executable)} "$@"`,
    '',
  ].join('\n');
}

/** What a browser the daemon starts as root would be able to do with its priority. */
export interface RootCapabilities {
  /** It would run as root with CAP_SYS_NICE (root's programs get the whole bounding set). */
  mayRaisePriority: boolean;
  /** The daemon may take a capability out of the bounding set (CAP_SETPCAP); else setpriv would fail. */
  mayDropCapabilities: boolean;
}

const CAP_SETPCAP = 8n;
const CAP_SYS_NICE = 23n;

/** The daemon's own: from its uid and the capability sets in /proc/self/status (Linux). */
export function ownCapabilities(): RootCapabilities {
  if (process.platform !== 'linux' || process.getuid?.() !== 0) return { mayRaisePriority: false, mayDropCapabilities: false };
  let status = '';
  try {
    status = readFileSync('/proc/self/status', 'utf8');
  } catch {
    // No /proc: nothing known, nothing dropped.
  }
  const set = (name: string) => BigInt(`0x${new RegExp(`^${name}:\\s+([0-9a-f]+)`, 'm').exec(status)?.[1] ?? '0'}`);
  return { mayRaisePriority: ((set('CapBnd') >> CAP_SYS_NICE) & 1n) === 1n, mayDropCapabilities: ((set('CapEff') >> CAP_SETPCAP) & 1n) === 1n };
}
