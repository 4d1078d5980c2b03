import type { OptionDescriptor, VariantDescriptor } from '../pairs.ts';
import type { AudioTarget, VideoTarget } from './formats.ts';

const MAX_SECONDS = 24 * 3600;
const MAX_DIMENSION = 7680;

export const BITRATES = ['64k', '96k', '128k', '160k', '192k', '256k', '320k'];
const SAMPLE_RATES = ['8000', '11025', '16000', '22050', '32000', '44100', '48000'];
/** libopus only encodes at these rates; ffmpeg refuses any other `-ar` for it. */
const OPUS_SAMPLE_RATES = ['8000', '12000', '16000', '24000', '48000'];
export const PRESETS = ['ultrafast', 'superfast', 'veryfast', 'faster', 'fast', 'medium', 'slow', 'slower', 'veryslow'];

/** Lossless targets have no bitrate to choose. */
const DEFAULT_BITRATE: Record<AudioTarget, string | null> = {
  mp3: '192k', ogg: '160k', aac: '160k', m4a: '160k', opus: '128k', wav: null, flac: null,
};

const trimOptions: OptionDescriptor[] = [
  { name: 'trim_start', type: 'number', values: [], min: 0, max: MAX_SECONDS, default: null, label: 'Start at this time (seconds)' },
  { name: 'trim_end', type: 'number', values: [], min: 0, max: MAX_SECONDS, default: null, label: 'End at this time (seconds)' },
];

export function audioOptions(target: AudioTarget): OptionDescriptor[] {
  const options: OptionDescriptor[] = [];
  const bitrate = DEFAULT_BITRATE[target];
  if (bitrate !== null) {
    const label = target === 'ogg' ? 'Audio bitrate (Vorbis: the quality level with this nominal bitrate)' : 'Audio bitrate';
    options.push({ name: 'bitrate', type: 'enum', values: BITRATES, default: bitrate, label });
  }
  options.push(
    {
      name: 'sample_rate', type: 'enum', values: target === 'opus' ? OPUS_SAMPLE_RATES : SAMPLE_RATES, default: null,
      label: 'Sample rate in Hz (default: as the source, or the nearest the codec supports)',
    },
    { name: 'channels', type: 'enum', values: ['1', '2'], default: null, label: 'Channels: 1 mono, 2 stereo (default: as the source)' },
    ...trimOptions,
  );
  return options;
}

const sizeOptions: OptionDescriptor[] = [
  { name: 'width', type: 'number', values: [], min: 16, max: MAX_DIMENSION, default: null, label: 'Fit within this width (pixels, aspect ratio kept)' },
  { name: 'height', type: 'number', values: [], min: 16, max: MAX_DIMENSION, default: null, label: 'Fit within this height (pixels, aspect ratio kept)' },
];

export function videoOptions(target: VideoTarget): OptionDescriptor[] {
  if (target === 'gif') {
    return [
      { name: 'fps', type: 'number', values: [], min: 1, max: 50, default: 10, label: 'Frames per second' },
      { name: 'width', type: 'number', values: [], min: 16, max: 1920, default: 480, label: 'Width in pixels (never enlarged)' },
      ...trimOptions,
    ];
  }
  const vp9 = target === 'webm';
  return [
    {
      name: 'crf', type: 'range', values: [], min: 0, max: vp9 ? 63 : 51, default: vp9 ? 32 : 23,
      label: 'Constant quality (CRF): lower is better and larger',
    },
    { name: 'preset', type: 'enum', values: PRESETS, default: 'medium', label: 'Encoding speed: faster gives larger files' },
    ...sizeOptions,
    { name: 'fps', type: 'number', values: [], min: 1, max: 120, default: null, label: 'Frames per second (default: as the source)' },
    ...trimOptions,
  ];
}

export function frameOptions(): OptionDescriptor[] {
  return [
    { name: 'time', type: 'number', values: [], min: 0, max: MAX_SECONDS, default: null, label: 'Time of the frame in seconds (default: the middle)' },
    ...sizeOptions,
  ];
}

/** Codec variants of a video target; h265 is offered only when the binary has libx265. */
export function videoVariants(target: VideoTarget, hasH265: boolean): VariantDescriptor[] {
  if (target === 'gif') {
    return [
      { key: 'high_quality', label: 'Optimised palette (better colours, slower)' },
      { key: 'fast', label: 'Fixed palette (faster)' },
    ];
  }
  if ((target === 'mp4' || target === 'mov' || target === 'mkv') && hasH265) {
    return [
      { key: 'h264', label: 'H.264 / AAC (plays everywhere)' },
      { key: 'h265', label: 'H.265 / AAC (smaller, less widely supported)' },
    ];
  }
  return [];
}
