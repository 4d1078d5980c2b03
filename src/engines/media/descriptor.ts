import { availableParallelism } from 'node:os';
import { defineEngine } from '../descriptor.ts';

/** ffmpeg: audio and video, and still frames of them. */
export const media = defineEngine({
  name: 'media',
  limits: { timeLimitMs: 1_800_000, listedAt: 5 },
  loader: () => {
    // One ffmpeg run uses every core: more at once only share them (media-engine.ts).
    const runs = availableParallelism();
    return { maxConcurrentRuns: runs, load: async () => (await import('./media-engine.ts')).createMediaEngine({ maxConcurrentRuns: runs }) };
  },
  binaries: [
    { name: 'ffmpeg', env: 'FFMPEG_PATH', npm: '@ffmpeg-installer' },
    { name: 'ffprobe', env: 'FFPROBE_PATH', npm: '@ffprobe-installer' },
  ],
});
