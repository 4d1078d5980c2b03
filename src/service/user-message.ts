/**
 * A failure message as the user who sent the file sees it. Engines and their libraries name the
 * files they were given (libvips: `…: /srv/convd/blobs/inputs/cnv_…: bad seek to 61568`), and
 * those are the server's paths: where the data dir is, how files are stored. The paths the caller
 * knows become words (`the input file`); any other absolute path becomes `a file`.
 *
 * An absolute path here is a `/` that follows no letter, digit, `:`, `/` or `.` (so no URL, no
 * fraction like 1/2, no relative path), with at least one more `/` after it.
 */
const ABSOLUTE_PATH = /(["']?)(?<![\w:/.])\/(?:[\w.+@%~-]+\/)+[\w.+@%~-]*\1/g;

export function withoutServerPaths(message: string, known: Readonly<Record<string, string>> = {}): string {
  let text = message;
  // Longest first: one known path may begin with another.
  for (const [path, words] of Object.entries(known).sort((a, b) => b[0].length - a[0].length)) {
    if (!path) continue;
    // A path between two colons only labels what follows (libvips: `header: PATH: bad seek`).
    text = text.split(`: ${path}: `).join(': ');
    for (const form of [`"${path}"`, `'${path}'`, path]) text = text.split(form).join(words);
  }
  return text.replace(ABSOLUTE_PATH, 'a file');
}
