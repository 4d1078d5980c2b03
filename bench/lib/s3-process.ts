/**
 * An S3-protocol server (s3rver, the suites' test/helpers/s3.ts) in a process of its own, for the
 * benches that run convd on a bucket: its CPU time is then its own (/proc/<pid>/stat), not mixed
 * with the load generator's. bench/lib/s3.ts starts it with TMPDIR set to a temp dir of the run,
 * so the bucket's files are removed with that dir whatever happens to this process.
 *
 * argv[2]: JSON `{ bucket, prefixes }`. Prints one JSON line, `{ endpoint, blobUrls }` (one blob
 * URL per prefix, in order), once the bucket and its prefixes are ready; closes on SIGTERM/SIGINT.
 */
import { startS3 } from '../../test/helpers/s3.ts';

const { bucket: name, prefixes } = JSON.parse(process.argv[2] ?? '{}') as { bucket: string; prefixes: string[] };
const bucket = await startS3(name);
// keepDirs puts empty bodies, which the SDK takes for streams of unknown length and warns about
// on the console at each: that warning alone is kept off the bench's output.
const warn = console.warn;
console.warn = (...args: unknown[]) => {
  if (!String(args[0]).startsWith('Are you using a Stream of unknown length')) warn(...args);
};
for (const prefix of prefixes) await bucket.keepDirs(prefix);
console.warn = warn;
process.stdout.write(`${JSON.stringify({ endpoint: bucket.endpoint, blobUrls: prefixes.map((prefix) => bucket.blobUrl(prefix)) })}\n`);

let closing = false;
const close = () => {
  if (closing) return;
  closing = true;
  void bucket.close().finally(() => process.exit(0));
};
process.once('SIGTERM', close);
process.once('SIGINT', close);
// The parent's end (even a SIGKILL) closes this pipe: go with it.
process.stdin.on('end', close).resume();
