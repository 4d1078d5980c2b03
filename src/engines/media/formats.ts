import type { FormatInfo } from '../pairs.ts';

export const AUDIO_SOURCES = ['mp3', 'wav', 'ogg', 'flac', 'aac', 'm4a', 'opus', 'aiff', 'au'] as const;
export const VIDEO_SOURCES = ['mp4', 'webm', 'mov', 'mkv', 'avi', 'mpg', 'ts', '3gp', 'flv', 'wmv', 'ogv'] as const;

export const AUDIO_TARGETS = ['mp3', 'wav', 'ogg', 'flac', 'aac', 'm4a', 'opus'] as const;
export const VIDEO_TARGETS = ['mp4', 'webm', 'mov', 'mkv', 'gif'] as const;
/** A still frame of a video. */
export const FRAME_TARGETS = ['jpg', 'png'] as const;

export type AudioTarget = (typeof AUDIO_TARGETS)[number];
export type VideoTarget = (typeof VIDEO_TARGETS)[number];
export type FrameTarget = (typeof FRAME_TARGETS)[number];

/**
 * Demuxers ffmpeg may open an input with. Probing by content alone would let an upload named
 * .mp4 be read as an HLS playlist or a concat list that pulls in other local files or URLs.
 */
export const INPUT_DEMUXERS = [
  'mov', 'matroska', 'avi', 'mp3', 'wav', 'ogg', 'flac', 'aac',
  // AIFF/AIFC, Sun AU, MPEG program and transport streams, Flash video, Windows Media (ASF).
  'aiff', 'au', 'mpeg', 'mpegts', 'flv', 'asf',
] as const;

export const MEDIA_FORMATS: FormatInfo[] = [
  { key: 'mp3', extensions: ['mp3'], mime: 'audio/mpeg' },
  { key: 'wav', extensions: ['wav', 'wave'], mime: 'audio/wav' },
  { key: 'ogg', extensions: ['ogg', 'oga'], mime: 'audio/ogg' },
  { key: 'flac', extensions: ['flac'], mime: 'audio/flac' },
  { key: 'aac', extensions: ['aac'], mime: 'audio/aac' },
  { key: 'm4a', extensions: ['m4a'], mime: 'audio/mp4' },
  { key: 'opus', extensions: ['opus'], mime: 'audio/opus' },
  { key: 'mp4', extensions: ['mp4', 'm4v'], mime: 'video/mp4' },
  { key: 'webm', extensions: ['webm'], mime: 'video/webm' },
  { key: 'mov', extensions: ['mov', 'qt'], mime: 'video/quicktime' },
  { key: 'mkv', extensions: ['mkv'], mime: 'video/x-matroska' },
  { key: 'avi', extensions: ['avi'], mime: 'video/x-msvideo' },
  { key: 'aiff', extensions: ['aiff', 'aif', 'aifc'], mime: 'audio/aiff' },
  { key: 'au', extensions: ['au', 'snd'], mime: 'audio/basic' },
  { key: 'mpg', extensions: ['mpg', 'mpeg', 'vob'], mime: 'video/mpeg' },
  // A camera's or a DVB recording's transport stream (.mts, .m2ts from AVCHD camcorders).
  { key: 'ts', extensions: ['ts', 'mts', 'm2ts', 'm2t'], mime: 'video/mp2t' },
  { key: '3gp', extensions: ['3gp', '3g2', '3gpp'], mime: 'video/3gpp' },
  { key: 'flv', extensions: ['flv'], mime: 'video/x-flv' },
  { key: 'wmv', extensions: ['wmv', 'asf'], mime: 'video/x-ms-wmv' },
  { key: 'ogv', extensions: ['ogv'], mime: 'video/ogg' },
  // Also the image engine's formats; declared with the same information.
  { key: 'gif', extensions: ['gif'], mime: 'image/gif' },
  { key: 'jpg', extensions: ['jpg', 'jpeg', 'jpe', 'jfif'], mime: 'image/jpeg' },
  { key: 'png', extensions: ['png'], mime: 'image/png' },
];
