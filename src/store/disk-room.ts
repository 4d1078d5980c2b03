/**
 * How much more may be written to the data dir's disk now, above its floor: the daemon watches
 * the disk (daemon/ops/disk-space.ts); the in-process CLI has no floor.
 */
export interface DiskRoom {
  /** Bytes that may still be written above the floor; Infinity when there is no floor to keep. */
  headroom(): number;
}

export const UNLIMITED_ROOM: DiskRoom = { headroom: () => Infinity };
