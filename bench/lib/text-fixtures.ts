/**
 * Large text documents for the large-text bench: about 1 MB of plain text and 1 MB of Markdown,
 * made from a fixed seed so every run converts the same bytes. The text reads like a manual or a
 * licence: paragraphs of prose broken into lines at about 72 columns (as real text files are), a
 * blank line between paragraphs, now and then a heading line or an indented list. The Markdown has
 * what real Markdown has: headings of three levels, paragraphs with emphasis, code spans and links,
 * bulleted and numbered lists (some nested), fenced code blocks, tables and quotes. Every section
 * has a marker word of its own (`Zq<n>x`) that a result must still hold.
 */

import { seededRandom } from '../../test/helpers/seeded-random.ts';

const WORDS = (
  'the a of to and in that is for it as with be on not this by are or from at which but have an they ' +
  'you were their one all we can her has there been if more when will would who so no other out some ' +
  'program software licence copy source code work distribute modify terms conditions warranty notice ' +
  'author holder patent right permission license document section file user service server request ' +
  'conversion format engine result output input table column value record library function option ' +
  'version release system network memory process thread queue worker page image text paragraph word ' +
  'reader writer character line heading list item link reference example figure chapter appendix ' +
  'provided without limitation merchantability fitness particular purpose liability damages contract'
).split(' ');


class Prose {
  private readonly next: () => number;
  constructor(seed: number) {
    this.next = seededRandom(seed);
  }

  int(max: number): number {
    return Math.floor(this.next() * max);
  }

  word(): string {
    return WORDS[this.int(WORDS.length)]!;
  }

  words(count: number): string {
    return Array.from({ length: count }, () => this.word()).join(' ');
  }

  sentence(): string {
    const text = this.words(6 + this.int(14));
    return `${text[0]!.toUpperCase()}${text.slice(1)}${this.int(5) === 0 ? ';' : '.'}`;
  }

  paragraph(sentences: number): string {
    return Array.from({ length: sentences }, () => this.sentence()).join(' ');
  }
}

/** Breaks a paragraph into lines of at most `width` columns, at spaces. */
function wrap(text: string, width = 72): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    if (line && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  if (line) lines.push(line);
  return lines;
}

export const marker = (section: number): string => `Zq${section}x`;

export interface TextFixture {
  text: string;
  /** The sections' marker words, in order. */
  markers: string[];
}

/** About `bytes` of plain text: sections of wrapped paragraphs, each section opened by a numbered heading line. */
export function plainText(bytes: number, seed = 1): TextFixture {
  return sections(bytes, new Prose(seed), (prose, section) => {
    const block: string[] = [`${section}. ${prose.words(3 + prose.int(4)).toUpperCase()} ${marker(section)}`, ''];
    for (let p = 0, count = 3 + prose.int(4); p < count; p++) {
      if (prose.int(6) === 0) {
        // An indented list, as licences and READMEs have.
        for (let i = 0, items = 2 + prose.int(3); i < items; i++) block.push(...wrap(`  ${String.fromCharCode(97 + i)}) ${prose.sentence()}`, 72));
      } else block.push(...wrap(prose.paragraph(3 + prose.int(5))));
      block.push('');
    }
    return block;
  });
}

/** About `bytes` of Markdown with headings, emphasis, links, lists, code, tables and quotes. */
export function markdown(bytes: number, seed = 2): TextFixture {
  return sections(bytes, new Prose(seed), (prose, section) => {
    const level = section % 10 === 1 ? '#' : section % 3 === 0 ? '###' : '##';
    const block: string[] = [`${level} ${prose.words(2 + prose.int(4))} ${marker(section)}`, ''];
    const inline = () => {
      const text = prose.paragraph(2 + prose.int(4)).split(' ');
      text.splice(prose.int(text.length), 0, `*${prose.word()}*`);
      text.splice(prose.int(text.length), 0, `**${prose.word()} ${prose.word()}**`);
      text.splice(prose.int(text.length), 0, `\`${prose.word()}_${prose.word()}()\``);
      text.splice(prose.int(text.length), 0, `[${prose.word()} ${prose.word()}](https://example.org/${section}/${prose.word()})`);
      return wrap(text.join(' ')).join('\n');
    };
    block.push(inline(), '');
    switch (section % 5) {
      case 0:
        for (let i = 0; i < 4; i++) {
          block.push(`- ${prose.sentence()}`);
          if (i === 1) block.push(`  - ${prose.sentence()}`, `  - ${prose.sentence()}`);
        }
        break;
      case 1:
        block.push('```js', `function ${prose.word()}_${section}(input) {`, `  const ${prose.word()} = input.map((x) => x * ${section});`, `  return ${prose.word()}.filter(Boolean); // ${prose.words(4)}`, '}', '```');
        break;
      case 2:
        block.push(`| ${prose.word()} | ${prose.word()} | count |`, '|---|---|---:|');
        for (let i = 0; i < 4; i++) block.push(`| ${prose.words(2)} | ${prose.words(3)} | ${prose.int(10_000)} |`);
        break;
      case 3:
        for (let i = 1; i <= 3; i++) block.push(`${i}. ${prose.sentence()}`);
        break;
      default:
        block.push(...wrap(prose.paragraph(2), 70).map((line) => `> ${line}`));
    }
    block.push('', inline(), '');
    return block;
  });
}

/** Sections made by `section` (its lines; each holds its marker) until about `bytes`. */
function sections(bytes: number, prose: Prose, section: (prose: Prose, index: number) => string[]): TextFixture {
  const parts: string[] = [];
  const markers: string[] = [];
  let size = 0;
  for (let index = 1; size < bytes; index++) {
    markers.push(marker(index));
    const text = `${section(prose, index).join('\n')}\n`;
    parts.push(text);
    size += Buffer.byteLength(text);
  }
  return { text: parts.join(''), markers };
}
