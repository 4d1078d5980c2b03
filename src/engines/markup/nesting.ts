import { createReadStream } from 'node:fs';
import { ConversionFailure } from '../../errors/api-error.ts';
import { TAG_START } from './text-source.ts';

/**
 * pandoc's Markdown reader matches every line against every open list: its time grows with the
 * square of the depth (a list 1,500 levels deep, 2 MB, takes it 16-18 s). No document nests a list
 * a hundred levels deep, so a deeper one is refused before pandoc runs. (Quotes it reads fast;
 * what its writers make of thousands of them meets the time and heap limits.)
 */
const MAX_LIST_INDENT = 400;
/** Only a line's start matters: a longer line is cut, never held whole. */
const MAX_HELD_CHARS = 8 * 1024;

const LIST_ITEM = /^(?:[-*+]|\d{1,9}[.)])(?:[ \t]|$)/;

/**
 * One pass over a Markdown file before pandoc reads it: refuses a list item indented more than
 * MAX_LIST_INDENT columns, naming the line, and tells whether the text may hold raw HTML (as
 * mayHoldHtml does for the other sources), so the file is read once for both.
 */
export async function scanMarkdown(inputPath: string, signal: AbortSignal): Promise<{ mayHoldHtml: boolean }> {
  let pending = '';
  let line = 0;
  let mayHoldHtml = false;
  const check = (text: string) => {
    line++;
    const { indent, rest } = leading(text);
    if (indent > MAX_LIST_INDENT && LIST_ITEM.test(rest)) {
      throw new ConversionFailure('input_invalid', `Line ${line} is a list item indented ${indent} columns: Markdown lists are converted up to ${MAX_LIST_INDENT} columns deep (a hundred levels or more), since deeper ones take the reader minutes.`);
    }
  };
  for await (const chunk of createReadStream(inputPath, { encoding: 'latin1', signal })) {
    // The tag test on the whole chunk and the last character before it: a held line is cut.
    mayHoldHtml ||= TAG_START.test(pending.slice(-1) + (chunk as string));
    const lines = (pending + (chunk as string)).split('\n');
    pending = (lines.pop() ?? '').slice(0, MAX_HELD_CHARS);
    for (const text of lines) check(text);
  }
  if (pending !== '') check(pending);
  return { mayHoldHtml };
}

/** The columns of a line's leading white space (a tab to the next multiple of 4, as CommonMark counts) and what follows. */
function leading(text: string): { indent: number; rest: string } {
  let indent = 0;
  let index = 0;
  for (; index < text.length; index++) {
    const char = text[index];
    if (char === ' ') indent++;
    else if (char === '\t') indent += 4 - (indent % 4);
    else break;
  }
  return { indent, rest: text.slice(index) };
}
