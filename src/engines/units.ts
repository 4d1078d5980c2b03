/** A time limit for people: `1.5 s`, or `400 ms` below a second. */
export function formatSeconds(ms: number): string {
  const seconds = ms / 1000;
  return seconds >= 1 ? `${Number(seconds.toFixed(1))} s` : `${ms} ms`;
}

/** Bytes as MB (MiB, as the plans count them), one decimal where it matters. */
export function formatMegabytes(bytes: number): string {
  return `${Number((bytes / (1024 * 1024)).toFixed(1))} MB`;
}

/** A size for people: `253 bytes`, `4.1 KB`, `1.2 MB` (KiB and MiB, as the plans count). */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} byte${bytes === 1 ? '' : 's'}`;
  if (bytes < 1024 * 1024) return `${Number((bytes / 1024).toFixed(1))} KB`;
  return formatMegabytes(bytes);
}
