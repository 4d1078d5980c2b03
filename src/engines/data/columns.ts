/**
 * Column names of a table read from CSV/TSV (or a spreadsheet's CSV): real header rows have
 * blank and repeated cells (titles, merged cells), and rows run past the header; every value
 * still needs a key of its own, so a blank cell is named after its column's letter and a
 * repeated name gets a number.
 */

/** A column's spreadsheet letter: 0 -> A, 25 -> Z, 26 -> AA. */
export function columnLetter(index: number): string {
  let letters = '';
  for (let n = index + 1; n > 0; n = Math.floor((n - 1) / 26)) letters = String.fromCharCode(65 + ((n - 1) % 26)) + letters;
  return letters;
}

/**
 * Hands out unique keys: a name as it is while free, else `name_2`, `name_3`, ... A name the
 * header itself holds is never given to another column (a blank third column is not called "C"
 * when a real column is).
 */
export class ColumnNames {
  readonly names: string[] = [];
  private readonly taken = new Set<string>();
  private readonly given: Set<string>;

  constructor(headerCells: readonly string[]) {
    this.given = new Set(headerCells.filter((cell) => !isBlank(cell)));
    headerCells.forEach((cell, index) => this.add(isBlank(cell) ? columnLetter(index) : cell, !isBlank(cell)));
  }

  /** The key of column `index`; columns past the header are named after their letter. */
  at(index: number): string {
    while (this.names.length <= index) this.add(columnLetter(this.names.length), false);
    return this.names[index]!;
  }

  private add(base: string, fromHeader: boolean): void {
    const free = (name: string) => !this.taken.has(name) && ((fromHeader && name === base) || !this.given.has(name));
    let name = base;
    for (let n = 2; !free(name); n++) name = `${base}_${n}`;
    this.taken.add(name);
    this.names.push(name);
  }
}

function isBlank(cell: string): boolean {
  return cell.trim() === '';
}

const NUMBER = /^[-+]?(\d+([.,]\d*)?|[.,]\d+)([eE][-+]?\d+)?%?$/;

/** A first row that holds only numbers (and blanks) is data, not column names. */
export function isNumbersOnly(cells: readonly string[]): boolean {
  const filled = cells.filter((cell) => !isBlank(cell));
  return filled.length > 0 && filled.every((cell) => NUMBER.test(cell.trim()));
}
