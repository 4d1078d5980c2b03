/**
 * Reads ffmpeg's `-progress` output (blocks of key=value lines, each ending with
 * `progress=continue` or `progress=end`) and turns the position reached into a percentage of the
 * expected output duration. It never says 100: that is reported by the engine once ffmpeg has
 * exited successfully (ffmpeg also ends with `progress=end` when it was killed).
 */
export class ProgressReader {
  private outTimeSeconds = 0;

  constructor(
    private readonly expectedSeconds: number | null,
    private readonly report: (percent: number) => void,
  ) {}

  line(text: string): void {
    const eq = text.indexOf('=');
    if (eq <= 0) return;
    const key = text.slice(0, eq).trim();
    const value = text.slice(eq + 1).trim();
    switch (key) {
      // out_time_ms is in microseconds too (an old ffmpeg misnomer); out_time_us is the newer name.
      case 'out_time_us':
      case 'out_time_ms': {
        const micros = Number(value);
        if (Number.isFinite(micros) && micros >= 0) this.setTime(micros / 1e6);
        break;
      }
      case 'out_time': {
        const seconds = parseClock(value);
        if (seconds !== null) this.setTime(seconds);
        break;
      }
      case 'progress':
        if (this.expectedSeconds && this.expectedSeconds > 0) {
          this.report(Math.max(0, Math.min(99, Math.floor((this.outTimeSeconds / this.expectedSeconds) * 100))));
        }
        break;
      default:
    }
  }

  private setTime(seconds: number): void {
    // Before the first packet ffmpeg reports a negative (or no-timestamp) position: not progress.
    if (!(seconds >= 0)) return;
    this.outTimeSeconds = seconds;
  }
}

/** `HH:MM:SS.micro` -> seconds; null for `N/A` or anything else. */
function parseClock(text: string): number | null {
  const match = /^(-?)(\d+):(\d{2}):(\d{2}(?:\.\d+)?)$/.exec(text);
  if (!match) return null;
  const seconds = Number(match[2]) * 3600 + Number(match[3]) * 60 + Number(match[4]);
  return match[1] ? -seconds : seconds;
}
