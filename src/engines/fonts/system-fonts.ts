import { execFile } from 'node:child_process';
import { readdir } from 'node:fs/promises';
import { promisify } from 'node:util';
import { fontCoverage } from './coverage.ts';

const run = promisify(execFile);

/** A letter of each script people write documents in, and the Debian package with a font for it. */
const SCRIPTS: { name: string; sample: string; package: string }[] = [
  { name: 'Latin', sample: 'Aaß', package: 'fonts-dejavu-core' },
  { name: 'Greek', sample: 'Ωω', package: 'fonts-dejavu-core' },
  { name: 'Cyrillic', sample: 'Жж', package: 'fonts-dejavu-core' },
  { name: 'Arabic', sample: 'عڤ', package: 'fonts-noto-core' },
  { name: 'Hebrew', sample: 'אש', package: 'fonts-noto-core' },
  { name: 'Devanagari', sample: 'कॐ', package: 'fonts-noto-core' },
  { name: 'Bengali', sample: 'ক', package: 'fonts-noto-core' },
  { name: 'Tamil', sample: 'த', package: 'fonts-noto-core' },
  { name: 'Thai', sample: 'ก', package: 'fonts-noto-core' },
  { name: 'Armenian', sample: 'Ա', package: 'fonts-noto-core' },
  { name: 'Georgian', sample: 'ა', package: 'fonts-noto-core' },
  { name: 'Ethiopic', sample: 'አ', package: 'fonts-noto-core' },
  { name: 'Chinese', sample: '汉漢', package: 'fonts-noto-cjk' },
  { name: 'Japanese', sample: 'あア', package: 'fonts-noto-cjk' },
  { name: 'Korean', sample: '한', package: 'fonts-noto-cjk' },
];

/** Word's fonts, the metric-compatible faces that keep its line breaks, and where they come from. */
const STAND_INS: { font: string; compatible: RegExp; package: string }[] = [
  { font: 'Calibri', compatible: /^Carlito$/, package: 'fonts-crosextra-carlito' },
  { font: 'Cambria', compatible: /^Caladea$/, package: 'fonts-crosextra-caladea' },
  { font: 'Arial', compatible: /^(Liberation Sans|Arimo|Nimbus Sans)$/, package: 'fonts-liberation2' },
  { font: 'Times New Roman', compatible: /^(Liberation Serif|Tinos|Nimbus Roman)$/, package: 'fonts-liberation2' },
  { font: 'Courier New', compatible: /^(Liberation Mono|Cousine|Nimbus Mono PS)$/, package: 'fonts-liberation2' },
];

/** Where LibreOffice finds hyphenation patterns on Debian (packages hyphen-*). */
const HYPHENATION_DIR = '/usr/share/hyphen';

export interface SystemFonts {
  /** How many fonts fontconfig lists; 0 when fontconfig is missing. */
  fonts: number;
  covered: string[];
  /** Scripts no installed font draws, each with a package that has one. */
  missing: { script: string; package: string }[];
  /** Word's fonts and what fontconfig gives for each. */
  standIns: { font: string; used: string; compatible: boolean; package: string }[];
  colourEmoji: boolean;
  /** An outline font with emoji, which LibreOffice draws them in (its PDFs cannot show colour ones). */
  outlineEmoji: boolean;
  /** Languages with hyphenation patterns (hyph_de_DE.dic -> de). */
  hyphenation: string[];
}

/** What the engines that draw text (LibreOffice, Chromium) can find on this system. */
export async function systemFonts(): Promise<SystemFonts> {
  const coverage = await fontCoverage();
  const covered: string[] = [];
  const missing: SystemFonts['missing'] = [];
  for (const script of SCRIPTS) {
    if ([...script.sample].every((char) => coverage.covers(char.codePointAt(0)!))) covered.push(script.name);
    else missing.push({ script: script.name, package: script.package });
  }
  const standIns = await Promise.all(STAND_INS.map(async ({ font, compatible, package: name }) => {
    const used = await fontconfig(['--format', '%{family[0]}', font]);
    return { font, used: used || '(none)', compatible: compatible.test(used), package: name };
  }));
  const colourEmoji = (await fontconfig(['--format', '%{family[0]}\\n', ':color=true:charset=1f600'], 'fc-list')) !== '';
  const outlineEmoji = (await fontconfig(['--format', '%{family[0]}\\n', ':color=false:charset=1f600'], 'fc-list')) !== '';
  const hyphenation = (await readdir(HYPHENATION_DIR).catch(() => [] as string[]))
    .map((name) => /^hyph_([a-z]{2,3})[_.]/.exec(name)?.[1])
    .filter((language): language is string => language !== undefined);
  return { fonts: coverage.fonts, covered, missing, standIns, colourEmoji, outlineEmoji, hyphenation: [...new Set(hyphenation)].sort() };
}

async function fontconfig(args: string[], command = 'fc-match'): Promise<string> {
  return run(command, args, { timeout: 10_000 }).then(({ stdout }) => stdout.trim(), () => '');
}
