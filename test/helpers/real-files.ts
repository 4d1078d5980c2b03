/**
 * The real-file suite's files: what Debian's packages ship (LibreOffice's templates and samples,
 * GNOME's icons, Ghostscript's pixmaps, manuals in Markdown, HTML and reStructuredText, PDFs,
 * tables and sounds), each with the targets people most often want of it. `.ci/run` installs each
 * package named here, or one that depends on it (LibreOffice, pandoc, Ghostscript, Python).
 *
 * Not held:
 * - LaTeX: no package CI installs ships a LaTeX document (pandoc's `default.latex` is a template
 *   of placeholders, gdb's reference card plain TeX).
 * - CREDITS.fodt -> pdf: its table of names is 26.2 cm wide on a page with 17 cm between the
 *   margins, and LibreOffice prints it cut at the page's edge: the fourth column (381 of 1,678
 *   names) is missing from the PDF, as from LibreOffice's own print. Its txt and docx hold them.
 * - A JSON object that wraps a table (`{"4217": [...]}`, as iso-codes ships all of its tables) to
 *   csv or xlsx: one row whose one cell holds the whole table as JSON text, not the table.
 */
import { existsSync, readdirSync } from 'node:fs';
import { basename, join } from 'node:path';

/** How a source's words are read, and what its outputs are checked against. */
export type Family = 'office' | 'flat-office' | 'image' | 'xpm' | 'markdown' | 'html' | 'rst' | 'pdf' | 'data' | 'audio';

/** A target the service refuses for this file, with the error code and the words it must give. */
export interface KnownRefusal {
  target: string;
  code: string;
  message: RegExp;
}

export interface RealFile {
  /** An absolute path; a `*` stands for a version directory (the first match, sorted, is taken). */
  pattern: string;
  package: string;
  family: Family;
  targets: string[];
  refusals?: KnownRefusal[];
}

const LO = '/usr/lib/libreoffice';
const TEMPLATES = `${LO}/share/template/common`;
const ICONS = '/usr/share/icons/Adwaita';
const SOUNDS = `${LO}/share/gallery/sounds`;

export const REAL_FILES: RealFile[] = [
  // LibreOffice's templates and samples: text, sheets, slides, a drawing, a flat document.
  { pattern: `${TEMPLATES}/officorr/Modern_business_letter_serif.ott`, package: 'libreoffice-common', family: 'office', targets: ['pdf', 'docx', 'odt', 'html'] },
  { pattern: `${TEMPLATES}/personal/CV.ott`, package: 'libreoffice-common', family: 'office', targets: ['pdf', 'docx', 'txt', 'png'] },
  { pattern: `${TEMPLATES}/wizard/agenda/1simple.ott`, package: 'libreoffice-common', family: 'office', targets: ['pdf', 'rtf'] },
  // Every word in frames holding tables: text boxes by the way of docx for md and html, the bridge's
  // frames for txt. Opened as a new document from the template, it crashed its instance within a
  // second (a busy CI box's txt took that long, and went the second way, without the frames).
  { pattern: `${TEMPLATES}/offimisc/Businesscard-with-logo.ott`, package: 'libreoffice-common', family: 'office', targets: ['txt', 'md', 'html'] },
  // Styles and one empty paragraph: an empty text, LibreOffice's zero bytes.
  { pattern: `${TEMPLATES}/wizard/report/stl-01.ott`, package: 'libreoffice-common', family: 'office', targets: ['txt'] },
  { pattern: `${TEMPLATES}/internal/idxexample.odt`, package: 'libreoffice-common', family: 'office', targets: ['pdf', 'docx', 'txt', 'html'] },
  { pattern: `${TEMPLATES}/wizard/styles/default.ots`, package: 'libreoffice-common', family: 'office', targets: ['pdf', 'xlsx', 'csv'] },
  { pattern: `${LO}/program/opencl/cl-test.ods`, package: 'libreoffice-common', family: 'office', targets: ['xlsx', 'csv', 'pdf', 'json'] },
  { pattern: `${TEMPLATES}/presnt/Blue_Curve.otp`, package: 'libreoffice-common', family: 'office', targets: ['pdf', 'pptx', 'png'] },
  { pattern: `${LO}/share/template/en-US/presnt/debian-presentation.otp`, package: 'libreoffice-common', family: 'office', targets: ['pdf', 'pptx', 'jpg'] },
  { pattern: `${TEMPLATES}/draw/bpmn.otg`, package: 'libreoffice-common', family: 'office', targets: ['pdf', 'png', 'svg'] },
  { pattern: `${LO}/CREDITS.fodt`, package: 'libreoffice-common', family: 'flat-office', targets: ['txt', 'docx', 'odt'] },
  // Icons with transparency, raster and scalable.
  { pattern: `${ICONS}/512x512/places/folder.png`, package: 'adwaita-icon-theme', family: 'image', targets: ['jpg', 'webp', 'pdf'] },
  { pattern: `${ICONS}/256x256/places/user-trash.png`, package: 'adwaita-icon-theme', family: 'image', targets: ['jpg', 'bmp', 'avif'] },
  { pattern: `${ICONS}/48x48/legacy/accessories-calculator.png`, package: 'adwaita-icon-theme', family: 'image', targets: ['jpg', 'gif', 'tiff'] },
  { pattern: `${ICONS}/16x16/legacy/accessories-text-editor-symbolic.symbolic.png`, package: 'adwaita-icon-theme', family: 'image', targets: ['jpg', 'webp'] },
  { pattern: `${ICONS}/scalable/places/folder-music-symbolic.svg`, package: 'adwaita-icon-theme', family: 'image', targets: ['png', 'jpg', 'pdf'] },
  { pattern: `${ICONS}/scalable/devices/audio-headphones-symbolic.svg`, package: 'adwaita-icon-theme', family: 'image', targets: ['png', 'webp'] },
  { pattern: '/usr/share/ghostscript/*/lib/gs_l.xpm', package: 'libgs10-common', family: 'xpm', targets: ['png', 'jpg'] },
  { pattern: '/usr/share/ghostscript/*/lib/gs_s.xpm', package: 'libgs10-common', family: 'xpm', targets: ['png', 'webp'] },
  // Manuals: Markdown, HTML, reStructuredText.
  { pattern: '/usr/share/doc/pandoc/README.md.gz', package: 'pandoc', family: 'markdown', targets: ['html', 'docx', 'pdf', 'txt'] },
  { pattern: '/usr/share/doc/openssl/README-ENGINES.md.gz', package: 'openssl', family: 'markdown', targets: ['html', 'odt', 'pdf', 'epub'] },
  { pattern: '/usr/share/doc/fish/cmds/set.html', package: 'fish-common', family: 'html', targets: ['pdf', 'md', 'txt', 'docx'] },
  { pattern: '/usr/share/doc/fish/cmds/string.html', package: 'fish-common', family: 'html', targets: ['pdf', 'txt'] },
  { pattern: '/usr/share/doc/fontconfig/fontconfig-user.html', package: 'fontconfig', family: 'html', targets: ['pdf', 'md', 'docx'] },
  { pattern: '/usr/share/doc/shared-mime-info/shared-mime-info-spec.html/x34.html', package: 'shared-mime-info', family: 'html', targets: ['pdf', 'txt', 'odt'] },
  { pattern: '/usr/share/cmake-*/Help/manual/cmake-qt.7.rst', package: 'cmake-data', family: 'rst', targets: ['html', 'docx', 'pdf'] },
  { pattern: '/usr/share/doc/python3.*/README.rst.gz', package: 'python3', family: 'rst', targets: ['html', 'txt', 'odt'] },
  { pattern: '/usr/lib/python3.*/email/architecture.rst', package: 'python3', family: 'rst', targets: ['html', 'docx', 'pdf'] },
  // PDFs.
  { pattern: '/usr/share/doc/shared-mime-info/shared-mime-info-spec.pdf', package: 'shared-mime-info', family: 'pdf', targets: ['png', 'txt', 'jpg'] },
  { pattern: '/usr/share/doc/libtasn1-doc/libtasn1.pdf', package: 'libtasn1-doc', family: 'pdf', targets: ['txt', 'png'] },
  // Data.
  { pattern: '/usr/share/distro-info/debian.csv', package: 'distro-info-data', family: 'data', targets: ['json', 'xlsx', 'pdf'] },
  { pattern: '/usr/share/distro-info/ubuntu.csv', package: 'distro-info-data', family: 'data', targets: ['yaml', 'html', 'ods'] },
  { pattern: '/usr/share/iso-codes/json/iso_4217.json', package: 'iso-codes', family: 'data', targets: ['yaml', 'html', 'pdf'] },
  { pattern: '/usr/share/iso-codes/json/iso_3166-1.json', package: 'iso-codes', family: 'data', targets: ['yaml', 'pdf'] },
  { pattern: '/usr/share/pandoc/data/translations/de.yaml', package: 'pandoc-data', family: 'data', targets: ['json', 'csv', 'pdf'] },
  // Sounds.
  { pattern: `${SOUNDS}/cow.wav`, package: 'libreoffice-common', family: 'audio', targets: ['mp3', 'ogg'] },
  { pattern: `${SOUNDS}/gong.wav`, package: 'libreoffice-common', family: 'audio', targets: ['mp3', 'flac'] },
];

/** The file a pattern names on this machine (its `*` matched in one directory), or undefined. */
export function locate(pattern: string): string | undefined {
  let paths = ['/'];
  for (const part of pattern.split('/').filter(Boolean)) {
    if (!part.includes('*')) {
      paths = paths.map((path) => join(path, part));
      continue;
    }
    const match = new RegExp(`^${part.split('*').map((piece) => piece.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`);
    paths = paths.flatMap((path) => (existsSync(path) ? readdirSync(path).filter((name) => match.test(name)).sort().map((name) => join(path, name)) : []));
  }
  return paths.find((path) => existsSync(path));
}

/** The name a file is uploaded under: its own, without the `.gz` Debian compressed it with. */
export function uploadName(path: string): string {
  return basename(path).replace(/\.gz$/, '');
}
