import { ConversionFailure } from '../errors/api-error.ts';

/** The form of a page list option (`1-3,5`), whole: pages from 1, each range from a page to a later one. */
export const PAGE_LIST_PATTERN = '[1-9][0-9]{0,5}(-[1-9][0-9]{0,5})?(,[1-9][0-9]{0,5}(-[1-9][0-9]{0,5})?)*';

/** The ranges of a page list as written (`3,1-2` -> [3,3], [1,2]), each checked against the document's `count` pages. */
export function pageRanges(list: string, count: number, option: string): [number, number][] {
  return list.split(',').map((part) => {
    const [from, to = from] = part.split('-').map(Number) as [number, number?];
    if (!(from >= 1) || to! < from) throw new ConversionFailure('input_invalid', `${option}: ${part} is not a range of pages.`);
    if (to! > count) {
      throw new ConversionFailure('input_invalid', `${option}: the PDF has ${count} page${count === 1 ? '' : 's'}; page ${to} does not exist.`, { pages: count, page: to! });
    }
    return [from, to!];
  });
}

/** Every page a list names, in its order (`all`: every page of the document). */
export function pageNumbers(list: string, count: number, option: string): number[] {
  if (list === 'all') return Array.from({ length: count }, (_, index) => index + 1);
  return pageRanges(list, count, option).flatMap(([from, to]) => Array.from({ length: to - from + 1 }, (_, index) => from + index));
}
