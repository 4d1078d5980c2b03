/**
 * Counts the fields of each CSV record in the text on its way to csv-parse, by csv-parse's own
 * rules (a quote opens only at a field's start, `""` inside quotes is one quote, a comment only at
 * a record's start), so a record wider than the limit is refused before the parser builds it:
 * csv-parse takes about 10 µs a field, and a million-column line held the engine for 10-20 s.
 */
export interface ColumnGuardRules {
  delimiter: string;
  /** false: a quote character is an ordinary one. */
  quoted: boolean;
  /** Lines starting with this are comments; null: none. */
  comment: string | null;
  /** Fields a record may have at most. */
  maxColumns: number;
}

/** A record wider than the limit: its whole field count and the line it ends on (1-based). */
export interface WideRecord {
  columns: number;
  line: number;
}

const QUOTE = '"';

type LineBreak = '\r\n' | '\n' | '\r';

export class ColumnGuard {
  private fields = 1;
  /** csv-parse's count: each CR or LF is a line, but a record's CRLF is one. */
  private line = 1;
  private recordStarted = false;
  private fieldStarted = false;
  private inQuotes = false;
  /** Inside quotes, a quote was just seen: `""` (an escaped quote) or the field's close. */
  private quoteEnding = false;
  private inComment = false;
  /** Characters of the comment prefix matched at this record's start. */
  private commentMatched = 0;
  /** The record delimiter, as csv-parse finds it: the first line break outside quotes. */
  private lineBreak: LineBreak | null = null;
  /** A CR outside quotes whose meaning waits for the next character (CRLF or not). */
  private pendingCarriageReturn = false;
  private atFileStart = true;
  /** csv-parse counts a line break's line when it reads the next character. */
  private lineOwed = false;
  /** Set once a record has passed the limit; the text is only counted from then on. */
  private wide = false;

  constructor(private readonly rules: ColumnGuardRules) {}

  /** Whether a record being read is past the limit (its text should no longer be passed on). */
  get overLimit(): boolean {
    return this.wide;
  }

  /** Reads a chunk; returns the wide record once its end is seen, else null. */
  read(text: string): WideRecord | null {
    for (let i = 0; i < text.length; i++) {
      const ended = this.step(text[i]!);
      if (ended) return ended;
    }
    return null;
  }

  /** The end of the text ends the last record. */
  end(): WideRecord | null {
    return this.wide ? { columns: this.fields, line: this.line } : null;
  }

  private step(char: string): WideRecord | null {
    if (this.atFileStart) {
      this.atFileStart = false;
      if (char === '\ufeff') return null;
    }
    if (this.pendingCarriageReturn) {
      this.pendingCarriageReturn = false;
      if (char === '\n') {
        this.lineBreak ??= '\r\n';
        return this.endRecord();
      }
      if (this.lineBreak === null) {
        this.lineBreak = '\r';
        const ended = this.endRecord();
        if (ended) return ended;
      } else {
        this.ordinary(true);
      }
    }
    if (this.lineOwed) {
      this.lineOwed = false;
      this.line++;
    }
    if (this.inQuotes) {
      if (this.quoteEnding) {
        this.quoteEnding = false;
        if (char === QUOTE) return null;
        this.inQuotes = false;
      } else {
        if (char === QUOTE) this.quoteEnding = true;
        else if (char === '\n' || char === '\r') this.lineOwed = true;
        return null;
      }
    }
    if (char === '\r') {
      if (this.lineBreak === '\r') return this.endRecord();
      if (this.lineBreak === '\n') return this.ordinary(true);
      this.pendingCarriageReturn = true;
      return null;
    }
    if (char === '\n') {
      if (this.lineBreak === null) this.lineBreak = '\n';
      return this.lineBreak === '\n' ? this.endRecord() : this.ordinary(true);
    }
    if (this.inComment) return null;
    if (!this.recordStarted && this.startsComment(char)) return null;
    if (char === this.rules.delimiter) {
      this.recordStarted = true;
      this.fields++;
      this.fieldStarted = false;
      if (this.fields > this.rules.maxColumns) this.wide = true;
      return null;
    }
    if (char === QUOTE && this.rules.quoted && !this.fieldStarted) {
      this.recordStarted = true;
      this.inQuotes = true;
      this.fieldStarted = true;
      return null;
    }
    return this.ordinary(false);
  }

  /** A character that is a field's text; a line break that is not the record delimiter still counts a line. */
  private ordinary(lineBreak: boolean): null {
    if (lineBreak) this.lineOwed = true;
    if (this.inComment) return null;
    if (!this.recordStarted) this.commentMatched = 0;
    this.recordStarted = true;
    this.fieldStarted = true;
    return null;
  }

  /** Matches the comment prefix at a record's start; a partial match that fails is ordinary text. */
  private startsComment(char: string): boolean {
    const prefix = this.rules.comment;
    if (!prefix) return false;
    if (char === prefix[this.commentMatched]) {
      this.commentMatched++;
      if (this.commentMatched === prefix.length) this.inComment = true;
      return true;
    }
    // The prefixes offered ('#', '//', ';') hold no delimiter or quote but ';' whole, so the
    // characters matched so far only started a field.
    if (this.commentMatched > 0) {
      this.recordStarted = true;
      this.fieldStarted = true;
    }
    this.commentMatched = 0;
    return false;
  }

  private endRecord(): WideRecord | null {
    const wide = this.wide ? { columns: this.fields, line: this.line } : null;
    this.lineOwed = true;
    this.fields = 1;
    this.recordStarted = false;
    this.fieldStarted = false;
    this.inComment = false;
    this.commentMatched = 0;
    return wide;
  }
}

/**
 * Passes the text on while every record is within the limit; once one is past it, counts that
 * record to its end without passing it on, then throws what `refuse` makes of it.
 */
export async function* guardColumns(chunks: AsyncIterable<string>, rules: ColumnGuardRules, refuse: (wide: WideRecord) => Error): AsyncGenerator<string> {
  const guard = new ColumnGuard(rules);
  for await (const chunk of chunks) {
    const wide = guard.read(chunk);
    if (wide) throw refuse(wide);
    if (!guard.overLimit) yield chunk;
  }
  const wide = guard.end();
  if (wide) throw refuse(wide);
}
