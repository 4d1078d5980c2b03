/** A time limit for people: `1.5 s`, or `400 ms` below a second. */
export function formatSeconds(ms: number): string {
  const seconds = ms / 1000;
  return seconds >= 1 ? `${Number(seconds.toFixed(1))} s` : `${ms} ms`;
}

/** Bytes as MB (MiB, as the plans count them), one decimal where it matters. */
export function formatMegabytes(bytes: number): string {
  return `${Number((bytes / (1024 * 1024)).toFixed(1))} MB`;
}
