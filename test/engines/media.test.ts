import assert from 'node:assert/strict';
import { copyFile, mkdtemp, open, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ConversionFailure } from '../../src/errors/api-error.ts';
import { silentWav, storedZip } from '../helpers/hostile-files.ts';
import { findBinary } from '../../src/engines/media/binaries.ts';
import { createMediaEngine } from '../../src/engines/media/media-engine.ts';
import { ProgressReader } from '../../src/engines/media/progress.ts';
import { AUDIO_SOURCES, VIDEO_SOURCES } from '../../src/engines/media/formats.ts';
import { mpegTsReader } from '../../src/engines/media/probe.ts';
import { liveChildPids, runProcess } from '../../src/engines/subprocess.ts';
import type { EngineJob } from '../../src/engines/types.ts';
import type { ConversionPair } from '../../src/engines/pairs.ts';
import type { ConversionOptions } from '../../src/model/conversion.ts';
import { childrenNamed, leftoversOfGroup } from '../helpers/engines-proc.ts';
import { MEDIA_RECIPES } from '../helpers/registry-pairs-fixtures.ts';

// The suite runs on whatever ffmpeg the engine finds (FFMPEG_PATH, PATH or the npm packages):
// without one it fails, since CI must have it.
const engine = createMediaEngine();
const status = await engine.probe();
const pairs = engine.pairs();
const ffmpeg = (await findBinary('ffmpeg'))?.path;
const ffprobe = (await findBinary('ffprobe'))?.path;

const SECONDS = 2;
const WIDTH = 160;
const HEIGHT = 120;
const VIDEO = `testsrc2=size=${WIDTH}x${HEIGHT}:rate=10:duration=${SECONDS}`;
const AUDIO = `sine=frequency=440:sample_rate=44100:duration=${SECONDS}`;

/** What ffprobe must find in each target: codec of the first video and audio stream. */
const EXPECTED: Record<string, { video?: string; audio?: string; timed: boolean }> = {
  mp3: { audio: 'mp3', timed: true }, wav: { audio: 'pcm_s16le', timed: true }, ogg: { audio: 'vorbis', timed: true },
  flac: { audio: 'flac', timed: true }, aac: { audio: 'aac', timed: true }, m4a: { audio: 'aac', timed: true },
  opus: { audio: 'opus', timed: true },
  mp4: { video: 'h264', audio: 'aac', timed: true }, mov: { video: 'h264', audio: 'aac', timed: true },
  mkv: { video: 'h264', audio: 'aac', timed: true }, webm: { video: 'vp9', audio: 'opus', timed: true },
  gif: { video: 'gif', timed: true }, jpg: { video: 'mjpeg', timed: false }, png: { video: 'png', timed: false },
};

interface Probed {
  format: { duration?: string; format_name?: string };
  streams: { codec_type: string; codec_name: string; width?: number; height?: number; sample_rate?: string; channels?: number; r_frame_rate?: string; codec_tag_string?: string }[];
}

async function probe(file: string): Promise<Probed> {
  const lines: string[] = [];
  const result = await runProcess(ffprobe!, ['-v', 'error', '-show_format', '-show_streams', '-of', 'json', file], {
    onStdoutLine: (line) => lines.push(line),
  });
  assert.equal(result.code, 0, `ffprobe ${file}: ${result.stderrTail}`);
  return JSON.parse(lines.join('\n')) as Probed;
}

async function ffmpegRun(args: string[]): Promise<void> {
  const result = await runProcess(ffmpeg!, ['-hide_banner', '-v', 'error', '-nostdin', '-y', ...args]);
  assert.equal(result.code, 0, `ffmpeg ${args.join(' ')}: ${result.stderrTail}`);
}

let dir: string;
let counter = 0;
/** Duration of each source fixture as ffprobe reads it (an AVI rounds up to whole frames). */
const fixtureSeconds = new Map<string, number>();
const proven = new Set<string>();

function job(source: string, target: string, input: string, extra: Partial<EngineJob> = {}, options: ConversionOptions = {}): EngineJob {
  const pair = pairs.find((p) => p.source === source && p.target === target);
  return {
    inputPath: input,
    outputPath: join(dir, `out-${++counter}.${target}`),
    source,
    target,
    variant: pair?.variants[0]?.key ?? null,
    options: { ...defaults(pair), ...options },
    signal: new AbortController().signal,
    onProgress: () => undefined,
   
    ...extra,
  };
}

/** Options as the registry hands them over: validated, with every default applied. */
function defaults(pair: ConversionPair | undefined): ConversionOptions {
  const options: ConversionOptions = {};
  for (const d of pair?.options ?? []) if (d.default !== null) options[d.name] = d.default;
  // Keep the suite fast on two cores.
  if (pair?.options.some((d) => d.name === 'preset')) options.preset = 'ultrafast';
  return options;
}

function fixture(source: string): string {
  return join(dir, `fixture.${source}`);
}

function assertNear(actual: number, expected: number, what: string): void {
  assert.ok(Math.abs(actual - expected) <= expected * 0.05, `${what}: ${actual} s is not within 5 % of ${expected} s`);
}

async function assertNoMediaProcesses(): Promise<void> {
  assert.deepEqual(liveChildPids(), [], 'runProcess has no live child');
  assert.deepEqual(childrenNamed('ffmpeg'), [], 'no ffmpeg child of ours exists (running or zombie)');
  assert.deepEqual(childrenNamed('ffprobe'), []);
}

async function rejectsWith(promise: Promise<unknown>, code: string): Promise<ConversionFailure> {
  let caught: unknown;
  await promise.catch((error: unknown) => (caught = error));
  assert.ok(caught instanceof ConversionFailure, `expected ConversionFailure(${code}), got ${String(caught)}`);
  assert.equal(caught.code, code, caught.message);
  return caught;
}



before(async () => {
  assert.ok(status.available, `media engine unavailable: ${status.detail}`);
  dir = await mkdtemp(join(tmpdir(), 'convd-media-'));
  const sources = [...new Set(pairs.map((p) => p.source))];
  await Promise.all(sources.map(async (source) => {
    const args = MEDIA_RECIPES[source];
    assert.ok(args, `no fixture recipe for source ${source}: add one`);
    await ffmpegRun(['-f', 'lavfi', '-i', VIDEO, '-f', 'lavfi', '-i', AUDIO, '-ac', '2', '-shortest', ...args, fixture(source)]);
    fixtureSeconds.set(source, Number((await probe(fixture(source))).format.duration));
  }));
  await ffmpegRun(['-f', 'lavfi', '-i', VIDEO, '-an', '-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', join(dir, 'silent-video.mp4')]);
  await silentWav(join(dir, 'ten-hours.wav'), 10);
});

after(async () => {
  console.log(`media engine (ffmpeg ${status.version}): ${proven.size} of ${pairs.length} pairs proven`);
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('media engine', () => {
  it('finds ffmpeg and offers the audio and video pairs', () => {
    assert.ok(status.available, status.detail);
    assert.ok(status.version && status.binary);
    const has = (source: string, target: string) => pairs.some((p) => p.source === source && p.target === target);
    for (const source of ['mp3', 'wav', 'ogg', 'flac', 'aac', 'm4a', 'opus', 'mp4', 'webm', 'mov', 'mkv', 'avi']) {
      for (const target of ['mp3', 'wav', 'ogg', 'flac', 'aac', 'm4a', 'opus']) assert.ok(has(source, target), `${source} -> ${target}`);
    }
    for (const source of ['mp4', 'webm', 'mov', 'mkv', 'avi']) {
      for (const target of ['mp4', 'webm', 'mov', 'mkv', 'gif', 'jpg', 'png']) assert.ok(has(source, target), `${source} -> ${target}`);
    }
    for (const pair of pairs) {
      assert.equal(pair.engine, 'media');
      assert.equal(pair.kind, EXPECTED[pair.target]?.audio && !EXPECTED[pair.target]?.video ? 'audio' : 'video');
      for (const option of pair.options) {
        if (option.type === 'enum') assert.ok(option.values.length > 0 && (option.default === null || option.values.includes(String(option.default))));
      }
    }
    const keys = new Set(engine.formats().map((f) => f.key));
    for (const pair of pairs) assert.ok(keys.has(pair.source) && keys.has(pair.target));
  });

  it('reads the formats people have: aiff/aifc and au audio; mpg, ts, 3gp, flv, wmv and ogv video', async () => {
    const has = (source: string, target: string) => pairs.some((p) => p.source === source && p.target === target);
    for (const source of ['aiff', 'au']) assert.ok(has(source, 'mp3') && !has(source, 'mp4'), source);
    for (const source of ['mpg', 'ts', '3gp', 'flv', 'wmv', 'ogv']) assert.ok(has(source, 'mp4') && has(source, 'mp3') && has(source, 'png'), source);
    const byExtension = new Map(engine.formats().flatMap((format) => format.extensions.map((extension) => [extension, format.key] as const)));
    for (const [extension, key] of [['aif', 'aiff'], ['aifc', 'aiff'], ['mpeg', 'mpg'], ['m2ts', 'ts'], ['mts', 'ts'], ['m4v', 'mp4'], ['asf', 'wmv']]) {
      assert.equal(byExtension.get(extension), key, extension);
    }
    assert.ok(await mpegTsReader(ffmpeg!, ffprobe!), 'this toolchain reads MPEG-TS one way or the other');
  });

  it('an ffprobe that cannot read MPEG-TS (the npm build crashes on it): the stream is copied into Matroska first; with nothing that reads it, no ts', async () => {
    // Crashes on a transport stream, as the npm build does; reads anything else with the real one.
    const crashesOnTs = join(dir, 'ffprobe-crashes-on-ts');
    await writeFile(crashesOnTs, `#!/bin/sh\ncase "$*" in *.ts) kill -SEGV $$;; esac\nexec '${ffprobe!}' "$@"\n`, { mode: 0o755 });
    assert.equal(await mpegTsReader(ffmpeg!, crashesOnTs), 'remux');
    const remuxing = createMediaEngine({ env: { ...process.env, FFMPEG_PATH: ffmpeg!, FFPROBE_PATH: crashesOnTs } });
    assert.match((await remuxing.probe()).detail ?? '', /MPEG-TS copied into Matroska/);
    const input = join(dir, 'crash-case.ts');
    await ffmpegRun(['-f', 'lavfi', '-i', VIDEO, '-f', 'lavfi', '-i', AUDIO, '-c:v', 'mpeg2video', '-c:a', 'mp2', '-f', 'mpegts', input]);
    for (const target of ['mp4', 'wav']) {
      const j = job('ts', target, input);
      await remuxing.convert(j);
      const out = await probe(j.outputPath);
      assert.equal(out.streams.some((s) => s.codec_type === 'video'), target === 'mp4', target);
      assert.ok(out.streams.some((s) => s.codec_type === 'audio'), target);
      assertNear(Number(out.format.duration), SECONDS, `ts -> ${target}`);
    }
    const crashing = join(dir, 'ffprobe-crashing');
    // Answers -version; crashes on every file.
    await writeFile(crashing, '#!/bin/sh\ncase "$*" in *-version*) echo "ffprobe version test";; *) kill -SEGV $$;; esac\n', { mode: 0o755 });
    assert.equal(await mpegTsReader(ffmpeg!, crashing), null);
    const withoutTs = createMediaEngine({ env: { ...process.env, FFPROBE_PATH: crashing } });
    const crashed = await withoutTs.probe();
    assert.ok(!withoutTs.pairs().some((p) => p.source === 'ts'));
    assert.match(crashed.detail ?? '', /MPEG-TS .* not offered: neither this ffprobe nor this ffmpeg reads it/);
  });
});

/**
 * The builds convd supports, besides the one it finds: Debian's (/usr/bin, where installed) and
 * the npm packages'. Each must convert every declared source, made by its own ffmpeg (1 s each).
 */
const npmBuild = { ffmpeg: (await findBinary('ffmpeg', { env: { PATH: '' } }))?.path, ffprobe: (await findBinary('ffprobe', { env: { PATH: '' } }))?.path };
const debianBuild = { ffmpeg: '/usr/bin/ffmpeg', ffprobe: '/usr/bin/ffprobe' };
const otherBuilds = await Promise.all([['npm', npmBuild], ['Debian', debianBuild]].map(async ([name, build]) => {
  const { ffmpeg: f, ffprobe: p } = build as { ffmpeg?: string; ffprobe?: string };
  const usable = f && p && f !== ffmpeg && (await stat(f).then(() => true, () => false));
  return usable ? { name: name as string, ffmpeg: f, ffprobe: p } : null;
}));

for (const build of otherBuilds) {
  if (!build) continue;
  describe(`the ${build.name} ffmpeg converts every declared source`, { concurrency: 2 }, () => {
    const other = createMediaEngine({ env: { ...process.env, FFMPEG_PATH: build.ffmpeg, FFPROBE_PATH: build.ffprobe } });
    let ready: Promise<void> | undefined;
    const prepare = () => (ready ??= other.probe().then((probed) => assert.ok(probed.available, probed.detail)));
    const cases: [string, string, string[]][] = [
      ...VIDEO_SOURCES.map((source) => [source, 'mp4', MEDIA_RECIPES[source]!] as [string, string, string[]]),
      ...AUDIO_SOURCES.map((source) => [source, 'wav', MEDIA_RECIPES[source]!] as [string, string, string[]]),
      ['ts', 'mp3', MEDIA_RECIPES.ts!],
      ['ts', 'wav', ['-c:v', 'mpeg2video', '-c:a', 'mp2', '-f', 'mpegts']],
    ];
    for (const [source, target, recipe] of cases) {
      it(`${source} (${recipe.slice(0, 4).join(' ')}) -> ${target}`, async () => {
        await prepare();
        assert.ok(other.pairs().some((p) => p.source === source && p.target === target), `${source} -> ${target} offered`);
        const input = join(dir, `${build.name}-${++counter}.${source}`);
        const made = await runProcess(build.ffmpeg, [
          '-hide_banner', '-v', 'error', '-nostdin', '-y', '-f', 'lavfi', '-i', VIDEO.replace(`duration=${SECONDS}`, 'duration=1'),
          '-f', 'lavfi', '-i', AUDIO.replace(`duration=${SECONDS}`, 'duration=1'), '-ac', '2', '-shortest', ...recipe, input,
        ]);
        assert.equal(made.code, 0, made.stderrTail);
        const j = job(source, target, input);
        await other.convert(j);
        const out = await probe(j.outputPath);
        assert.equal(out.streams.some((s) => s.codec_type === 'video'), target === 'mp4');
        assert.ok(out.streams.some((s) => s.codec_type === 'audio'));
        const seconds = Number(out.format.duration);
        // Encoder padding and whole frames: within 0.15 s of the second made.
        assert.ok(Math.abs(seconds - 1) <= 0.15, `${source} -> ${target}: ${seconds} s`);
      });
    }
  });
}

describe('progress parsing', () => {
  it('turns -progress blocks into percentages: negative starts ignored, never 100 (the engine says that)', () => {
    const seen: number[] = [];
    const reader = new ProgressReader(10, (p) => seen.push(p));
    const block = (lines: string[]) => lines.forEach((line) => reader.line(line));
    block(['out_time_us=-9223372036854775807', 'out_time=-577014:32:22.775808', 'progress=continue']);
    block(['out_time_ms=2500000', 'progress=continue']); // older ffmpeg: microseconds under this name
    block(['out_time_us=N/A', 'out_time=00:00:07.500000', 'progress=continue']);
    block(['out_time_us=10020000', 'progress=continue']); // past the probed duration: capped at 99
    block(['progress=end']);
    assert.deepEqual(seen, [0, 25, 75, 99, 99]);
  });

  it('without a known duration nothing is reported', () => {
    const seen: number[] = [];
    const reader = new ProgressReader(null, (p) => seen.push(p));
    ['out_time_us=1000000', 'progress=continue', 'progress=end'].forEach((line) => reader.line(line));
    assert.deepEqual(seen, []);
  });
});

describe('every media pair converts, checked with ffprobe', { concurrency: 2 }, () => {
  for (const pair of pairs) {
    it(`${pair.source} -> ${pair.target}`, async () => {
      const expected = EXPECTED[pair.target];
      assert.ok(expected, `no expectation for target ${pair.target}: add one`);
      const progress: number[] = [];
      const j = job(pair.source, pair.target, fixture(pair.source), { onProgress: (p) => progress.push(p) });
      await engine.convert(j);
      const out = await probe(j.outputPath);
      const video = out.streams.find((s) => s.codec_type === 'video');
      const audio = out.streams.find((s) => s.codec_type === 'audio');
      if (expected.video) {
        assert.equal(video?.codec_name, expected.video);
        assert.equal(video?.width, WIDTH);
        assert.equal(video?.height, HEIGHT);
      } else {
        assert.equal(video, undefined, 'an audio target carries no video');
      }
      if (expected.audio) assert.equal(audio?.codec_name, expected.audio);
      if (expected.timed) assertNear(Number(out.format.duration), fixtureSeconds.get(pair.source)!, 'duration');
      assert.equal(progress.at(-1), 100);
      proven.add(`${pair.source}->${pair.target}`);
    });
  }
});

describe('variants and options', { concurrency: 2 }, () => {
  // Every variant that is not the default, once, on the first source offering it.
  const extraVariants = new Map<string, { pair: ConversionPair; variant: string }>();
  for (const pair of pairs) {
    for (const variant of pair.variants.slice(1)) {
      const key = `${pair.target}:${variant.key}`;
      if (!extraVariants.has(key)) extraVariants.set(key, { pair, variant: variant.key });
    }
  }
  for (const { pair, variant } of extraVariants.values()) {
    it(`${pair.source} -> ${pair.target} variant ${variant}`, async () => {
      const j = job(pair.source, pair.target, fixture(pair.source), { variant });
      await engine.convert(j);
      const out = await probe(j.outputPath);
      const video = out.streams.find((s) => s.codec_type === 'video');
      assert.equal(video?.codec_name, variant === 'h265' ? 'hevc' : EXPECTED[pair.target]?.video);
      if (variant === 'h265' && pair.target !== 'mkv') assert.equal(video?.codec_tag_string, 'hvc1');
      assertNear(Number(out.format.duration), fixtureSeconds.get(pair.source)!, 'duration');
    });
  }

  it('an 8 kHz mono input converts to every audio target with the default options', async () => {
    const targets = [...new Set(pairs.filter((p) => p.kind === 'audio').map((p) => p.target))];
    for (const target of targets) {
      const j = job('wav', target, join(dir, 'ten-hours.wav'), {}, { trim_end: 5 });
      await engine.convert(j);
      assertNear(Number((await probe(j.outputPath)).format.duration), 5, `${target} duration`);
    }
  });

  it('audio: bitrate, sample_rate and channels', async () => {
    const j = job('wav', 'mp3', fixture('wav'), {}, { bitrate: '64k', sample_rate: '22050', channels: '1' });
    await engine.convert(j);
    const audio = (await probe(j.outputPath)).streams[0]!;
    assert.equal(audio.sample_rate, '22050');
    assert.equal(audio.channels, 1);
    const size = (await stat(j.outputPath)).size;
    // 64 kbit/s for 2 s is 16 kB (plus a header); the default 192k would be three times that.
    assert.ok(size < 24_000, `${size} bytes`);
  });

  it('audio: trim_start and trim_end cut the clip', async () => {
    const j = job('flac', 'ogg', fixture('flac'), {}, { trim_start: 0.5, trim_end: 1.5 });
    await engine.convert(j);
    assertNear(Number((await probe(j.outputPath)).format.duration), 1, 'trimmed duration');
  });

  it('video: width keeps the aspect ratio, fps is applied, trim works', async () => {
    const j = job('mov', 'mp4', fixture('mov'), {}, { width: 80, fps: 5, trim_end: 1 });
    await engine.convert(j);
    const out = await probe(j.outputPath);
    const video = out.streams.find((s) => s.codec_type === 'video')!;
    assert.deepEqual([video.width, video.height, video.r_frame_rate], [80, 60, '5/1']);
    assertNear(Number(out.format.duration), 1, 'trimmed duration');
  });

  it('gif: width is honoured and never enlarges', async () => {
    const small = job('mp4', 'gif', fixture('mp4'), {}, { width: 64 });
    const large = job('mp4', 'gif', fixture('mp4'), { variant: 'fast' }, { width: 1000 });
    await Promise.all([engine.convert(small), engine.convert(large)]);
    assert.equal((await probe(small.outputPath)).streams[0]!.width, 64);
    assert.equal((await probe(large.outputPath)).streams[0]!.width, WIDTH);
  });

  it('still frame: time and size options; a time past the end is input_invalid', async () => {
    const j = job('webm', 'png', fixture('webm'), {}, { time: 0.5, height: 60 });
    await engine.convert(j);
    const frame = (await probe(j.outputPath)).streams[0]!;
    assert.deepEqual([frame.codec_name, frame.width, frame.height], ['png', 80, 60]);
    await rejectsWith(engine.convert(job('webm', 'jpg', fixture('webm'), {}, { time: 60 })), 'input_invalid');
  });

  it('trim_end before trim_start is input_invalid', async () => {
    await rejectsWith(engine.convert(job('mp3', 'wav', fixture('mp3'), {}, { trim_start: 1.5, trim_end: 1 })), 'input_invalid');
  });

  it('an audio target from a video without sound is input_invalid', async () => {
    const failure = await rejectsWith(engine.convert(job('mp4', 'mp3', join(dir, 'silent-video.mp4'))), 'input_invalid');
    assert.match(failure.message, /no audio stream/);
  });

  it('a video target from a file without video is input_invalid', async () => {
    await rejectsWith(engine.convert(job('mp4', 'webm', fixture('m4a'))), 'input_invalid');
  });

  it('reports progress from ffmpeg while it runs, rising to 100', async () => {
    const progress: number[] = [];
    // ~50 minutes of silence: long enough for several progress blocks, about two seconds of work.
    const j = job('wav', 'mp3', join(dir, 'ten-hours.wav'), { onProgress: (p) => progress.push(p) }, { trim_end: 3000, bitrate: '64k' });
    await engine.convert(j);
    assert.ok(progress.some((p) => p > 0 && p < 100), `intermediate progress: ${progress.join(',')}`);
    assert.deepEqual(progress, [...progress].sort((a, b) => a - b), 'never goes back');
    assert.equal(progress.at(-1), 100);
    assertNear(Number((await probe(j.outputPath)).format.duration), 3000, 'duration');
  });
});

describe('cancel, time limit and hostile inputs leave no process behind', () => {
  it('cancel kills ffmpeg and its process group; the job rejects with the reason', async () => {
    const controller = new AbortController();
    let groups: number[] = [];
    let started!: () => void;
    const running = new Promise<void>((resolve) => (started = resolve));
    const j = job('wav', 'mp3', join(dir, 'ten-hours.wav'), {
      signal: controller.signal,
      onProgress: (p) => {
        if (p > 0) {
          groups = liveChildPids();
          started();
        }
      },
    });
    const conversion = engine.convert(j);
    conversion.catch(() => undefined);
    await running;
    assert.equal(groups.length, 1, 'one ffmpeg is running');
    const reason = new Error('cancelled');
    controller.abort(reason);
    await assert.rejects(conversion, (error) => error === reason);
    assert.deepEqual(leftoversOfGroup(groups[0]!), []);
    await assertNoMediaProcesses();
  });

  it('the 10-hour silent audio hits the time limit: timeout, no process left', async () => {
    const limited = createMediaEngine({ timeLimitMs: 1000 });
    await limited.probe();
    const began = Date.now();
    await rejectsWith(limited.convert(job('wav', 'mp3', join(dir, 'ten-hours.wav'))), 'timeout');
    assert.ok(Date.now() - began < 5000);
    await assertNoMediaProcesses();
  });

  it('a time limit from the worker pool (abort with a timeout reason) ends the same way', async () => {
    const reason = new ConversionFailure('timeout', 'The conversion took longer than its limit.');
    const controller = new AbortController();
    setTimeout(() => controller.abort(reason), 800);
    await assert.rejects(engine.convert(job('wav', 'ogg', join(dir, 'ten-hours.wav'), { signal: controller.signal })), (e) => e === reason);
    await assertNoMediaProcesses();
  });

  it('a truncated video (moov at the end, cut in half) is input_invalid', async () => {
    const source = await readFile(fixture('mp4'));
    const path = join(dir, 'truncated.mp4');
    await writeFile(path, source.subarray(0, source.length >> 1));
    await rejectsWith(engine.convert(job('mp4', 'webm', path)), 'input_invalid');
    await assertNoMediaProcesses();
  });

  it('a truncated streamable video (moov first, data cut) is input_invalid, not a shorter output', async () => {
    const streamable = join(dir, 'faststart.mp4');
    await ffmpegRun(['-i', fixture('mp4'), '-c', 'copy', '-movflags', '+faststart', streamable]);
    const source = await readFile(streamable);
    const path = join(dir, 'truncated-faststart.mp4');
    await writeFile(path, source.subarray(0, Math.floor(source.length * 0.6)));
    const failure = await rejectsWith(engine.convert(job('mp4', 'mkv', path)), 'input_invalid');
    assert.match(failure.message, /damaged or truncated/);
    await assertNoMediaProcesses();
  });

  it('a zip renamed .mp4 is input_invalid', async () => {
    const path = join(dir, 'archive.mp4');
    await writeFile(path, storedZip('clip.mp4', await readFile(fixture('mp4'))));
    await rejectsWith(engine.convert(job('mp4', 'mp4', path)), 'input_invalid');
    await assertNoMediaProcesses();
  });

  it('a WAV of 36-bit samples, which ffmpeg has no decoder for, is input_invalid, saying so', async () => {
    // A real one ships with SciPy's tests (test-8000Hz-le-3ch-5S-36bit.wav); this is its header's kind.
    const samples = Buffer.alloc(5 * 800);
    const format = Buffer.alloc(16);
    format.writeUInt16LE(1, 0);
    format.writeUInt16LE(1, 2);
    format.writeUInt32LE(8000, 4);
    format.writeUInt32LE(8000 * 5, 8);
    format.writeUInt16LE(5, 12);
    format.writeUInt16LE(36, 14);
    const chunk = (id: string, body: Buffer) => {
      const size = Buffer.alloc(4);
      size.writeUInt32LE(body.length);
      return Buffer.concat([Buffer.from(id, 'latin1'), size, body]);
    };
    const wave = Buffer.concat([Buffer.from('WAVE', 'latin1'), chunk('fmt ', format), chunk('data', samples)]);
    const path = join(dir, 'samples-36bit.wav');
    await writeFile(path, chunk('RIFF', wave));
    const failure = await rejectsWith(engine.convert(job('wav', 'mp3', path)), 'input_invalid');
    assert.match(failure.message, /^The input's audio or video is in an encoding this ffmpeg cannot decode/);
    await assertNoMediaProcesses();
  });

  it('a 1 GB sparse file named .mp4 is input_invalid, quickly', async () => {
    const path = join(dir, 'sparse.mp4');
    const handle = await open(path, 'w');
    await handle.truncate(1024 ** 3);
    await handle.close();
    const began = Date.now();
    await rejectsWith(engine.convert(job('mp4', 'gif', path)), 'input_invalid');
    assert.ok(Date.now() - began < 5000, 'does not read the gigabyte');
    await assertNoMediaProcesses();
  });

  it('an HLS playlist named .mp4 is refused (no demuxer that pulls in other files)', async () => {
    const path = join(dir, 'playlist.mp4');
    await copyFile(fixture('mp4'), join(dir, 'segment.mp4'));
    await writeFile(path, '#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\nsegment.mp4\n#EXT-X-ENDLIST\n');
    await rejectsWith(engine.convert(job('mp4', 'mp4', path)), 'input_invalid');
    await assertNoMediaProcesses();
  });
});
