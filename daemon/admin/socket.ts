import { createServer, request, type Server } from 'node:http';
import { chmod, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { ConversionSystem } from '../../src/service/system.ts';
import type { WebSignIn } from '../../src/sign-in/web-sign-in.ts';
import { ADMIN_OPERATIONS, AdminError, type AdminContext } from './operations.ts';
import { ensurePrivateDir } from './private-dir.ts';

/**
 * In a directory of its own: bind() creates the socket with the process's umask (0777 under
 * umask 000) and a chmod can only follow, so it is the directory (0700 before the bind) that
 * keeps other users out from the first moment.
 */
export function adminSocketPath(dataDir: string): string {
  return join(dataDir, 'admin', 'convd.sock');
}

/** Where the socket lived before it had a directory of its own: removed at start. */
const OLD_SOCKET = 'convd.sock';

const MAX_BODY = 64 * 1024;

/**
 * The running daemon's admin channel: a unix socket in the data dir, owner-only, so admin
 * commands change the live store instead of a second writer touching the JSON files.
 */
export async function startAdminSocket(dataDir: string, system: ConversionSystem, signIn: WebSignIn): Promise<{ close(): Promise<void> }> {
  const path = adminSocketPath(dataDir);
  await ensurePrivateDir(dirname(path));
  await rm(path, { force: true });
  await rm(join(dataDir, OLD_SOCKET), { force: true });
  const context: AdminContext = {
    accounts: system.accounts, maintenance: system.maintenance, deliveries: system.deliveries, signIn,
    config: system.conversions.config, webhooks: system.webhooks,
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_BODY) chunks.push(chunk);
    });
    req.on('end', async () => {
      const answer = (status: number, body: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body));
      };
      try {
        const { op, args } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { op: string; args: Record<string, unknown> };
        const operation = ADMIN_OPERATIONS[op];
        if (!operation) return answer(404, { error: `unknown operation ${op}`, exitCode: 2 });
        answer(200, { result: await operation(context, args ?? {}) });
      } catch (error) {
        const exitCode = error instanceof AdminError ? error.exitCode : 1;
        answer(400, { error: error instanceof Error ? error.message : String(error), exitCode });
      }
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(path, () => resolve());
  });
  // The directory already keeps others out; the socket's own mode says the same to anyone looking.
  await chmod(path, 0o600);
  return {
    close: () => new Promise<void>((resolve) => server.close(() => resolve())).then(() => rm(path, { force: true })),
  };
}

/** Sends one operation to the daemon's socket. */
export function callAdminSocket(dataDir: string, op: string, args: Record<string, unknown>): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath: adminSocketPath(dataDir), method: 'POST', path: '/' }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        try {
          const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { result?: unknown; error?: string; exitCode?: number };
          if (res.statusCode === 200) resolve(body.result);
          else reject(new AdminError(body.error ?? 'admin operation failed', body.exitCode ?? 1));
        } catch (error) {
          reject(error);
        }
      });
    });
    req.on('error', reject);
    req.end(JSON.stringify({ op, args }));
  });
}
