import { findParentDeathWrapper } from '../process/group.ts';
import { searchPath } from '../process/path-search.ts';
import { runProcess } from '../subprocess.ts';

/**
 * Whether Chromium runs with its own sandbox. Its Linux sandbox puts every renderer into new
 * user, PID and network namespaces (and a seccomp filter); it refuses to start as root. So:
 * as an ordinary user, the sandbox is on where that user may make those namespaces; as root,
 * the browser runs as an unprivileged user of its own (`runAs`, a uid no one else uses) with
 * the sandbox on, where setpriv can switch to it and that user may make the namespaces.
 * Anywhere else it is off (`--no-sandbox`) and the request policy is the only wall; `why` says
 * so in `convd doctor`.
 */
export type SandboxPlan =
  | { on: true; runAs?: number; how: string }
  | { on: false; why: string };

export interface SandboxSettings {
  /** `auto` (the default) or `off`: html_sandbox. */
  mode: 'auto' | 'off';
  /** The uid the browser runs as when the daemon is root: html_sandbox_uid. */
  uid: number;
}

export const DEFAULT_SANDBOX_UID = 64_400;
const CHECK_TIME_LIMIT_MS = 10_000;
/** What Chromium's namespace sandbox makes for each renderer: the check makes the same. */
const NAMESPACES = ['--user', '--map-root-user', '--pid', '--net', '--fork'];

export async function planSandbox(settings: SandboxSettings, env: NodeJS.ProcessEnv = process.env): Promise<SandboxPlan> {
  if (settings.mode === 'off') return { on: false, why: 'turned off (html_sandbox off)' };
  if (process.platform !== 'linux') return { on: false, why: `not on ${process.platform}` };
  const unshare = await searchPath('unshare', env.PATH ?? '/usr/bin:/bin');
  if (!unshare) return { on: false, why: 'unshare (util-linux) is not installed, so user namespaces cannot be checked' };
  const uid = process.getuid?.() ?? 0;
  if (uid !== 0) {
    return (await succeeds(unshare, NAMESPACES))
      ? { on: true, how: 'as the daemon\'s user, in user namespaces' }
      : { on: false, why: `the daemon's user (uid ${uid}) may not create user namespaces (kernel setting, or the service's RestrictNamespaces)` };
  }
  const setpriv = await findParentDeathWrapper();
  if (!setpriv) return { on: false, why: 'the daemon runs as root and setpriv (util-linux 2.33 or newer) is missing to run the browser as another user' };
  const asUser = ['--reuid', String(settings.uid), '--regid', String(settings.uid), '--clear-groups', '--', unshare, ...NAMESPACES];
  return (await succeeds(setpriv, asUser))
    ? { on: true, runAs: settings.uid, how: `as uid ${settings.uid} (the daemon runs as root), in user namespaces` }
    : { on: false, why: `the daemon runs as root and uid ${settings.uid} may not create user namespaces here` };
}

async function succeeds(command: string, args: string[]): Promise<boolean> {
  try {
    const result = await runProcess(command, [...args, 'true'], { timeoutMs: CHECK_TIME_LIMIT_MS });
    return result.code === 0;
  } catch {
    return false;
  }
}

export function describeSandbox(plan: SandboxPlan): string {
  return plan.on ? `Chromium's sandbox on, ${plan.how}` : `Chromium's sandbox off (--no-sandbox): ${plan.why}`;
}
