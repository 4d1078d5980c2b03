import type { OutStream } from './io.ts';

export interface ProgressItem {
  name: string;
  status: string;
  progress: number | null;
}

/**
 * One status line on stderr, redrawn in place: a bar for one conversion, a count and a bar of
 * the mean progress for several. Only ever created for a terminal (see `createProgress`), so
 * pipes and CI logs never see carriage returns.
 */
export class ProgressLine {
  private items = new Map<number, ProgressItem>();
  private lastDraw = 0;
  private drawn = false;

  constructor(
    private readonly stream: OutStream,
    private readonly total: number,
  ) {}

  update(index: number, item: ProgressItem): void {
    this.items.set(index, item);
    const now = Date.now();
    // At most ten redraws a second: many concurrent updates must not flood the terminal.
    if (now - this.lastDraw < 100) return;
    this.lastDraw = now;
    this.draw();
  }

  /** Removes the line, so what follows starts on a clean row. */
  clear(): void {
    if (this.drawn) this.stream.write('\r\x1b[2K');
    this.drawn = false;
  }

  private draw(): void {
    const width = Math.max(20, Math.min(40, (this.stream.columns || 80) - 50));
    const items = [...this.items.values()];
    let text: string;
    if (this.total === 1 && items[0]) {
      const item = items[0];
      text = `${bar(item.progress ?? 0, width)} ${String(item.progress ?? 0).padStart(3)}% ${item.status} ${item.name}`;
    } else {
      const finished = items.filter((item) => isEnd(item.status)).length;
      const mean = items.reduce((sum, item) => sum + (isEnd(item.status) ? 100 : item.progress ?? 0), 0) / this.total;
      text = `${bar(mean, width)} ${finished}/${this.total} done`;
    }
    const columns = this.stream.columns || 80;
    this.stream.write(`\r\x1b[2K${text.slice(0, columns - 1)}`);
    this.drawn = true;
  }
}

function isEnd(status: string): boolean {
  return status === 'succeeded' || status === 'failed' || status === 'cancelled' || status === 'expired' || status === 'done';
}

function bar(percent: number, width: number): string {
  const filled = Math.round((Math.max(0, Math.min(100, percent)) / 100) * width);
  return `[${'#'.repeat(filled)}${'-'.repeat(width - filled)}]`;
}

/** A progress line for a terminal stderr, or nothing (pipes, --quiet). */
export function createProgress(stderr: OutStream, total: number, quiet: boolean): ProgressLine | null {
  return stderr.isTTY && !quiet ? new ProgressLine(stderr, total) : null;
}
