/**
 * The baseline of the get-throughput bench: a bare node:http server that answers every request with
 * the same JSON bytes and headers the daemon sends for GET /v1/conversions/{id}, and nothing else
 * (no routing, auth, store or framework). Run as its own process, like the daemon.
 *
 * Input: argv[2] = JSON `{ body: string, headers: Record<string,string>, encoding?: 'utf8' | 'latin1' }`
 * (latin1 carries bytes that are not text, a download's). A request's body is read and dropped
 * (node:http drains what the handler leaves). Prints the port.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

interface BareAnswer {
  body: string;
  headers: Record<string, string>;
  encoding?: 'utf8' | 'latin1';
}

const answer = JSON.parse(process.argv[2] ?? '{}') as BareAnswer;
const body = Buffer.from(answer.body, answer.encoding ?? 'utf8');
const server = createServer((_req, res) => {
  res.writeHead(200, answer.headers);
  res.end(body);
});
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${(server.address() as AddressInfo).port}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
