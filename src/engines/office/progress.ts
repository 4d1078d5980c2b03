import { ProgressWatch } from '../process/progress-watch.ts';

/** One call on the bridge's progress indicator (bridge.py `Progress`). */
interface IndicatorEvent {
  progress: 'start' | 'value' | 'end';
  range?: number;
  value?: number;
}

function isIndicatorEvent(event: unknown): event is IndicatorEvent {
  const candidate = event as Partial<IndicatorEvent> | null;
  return typeof candidate === 'object' && candidate !== null && typeof candidate.progress === 'string';
}

export interface OfficeProgress {
  /**
   * Whether the bridge is to pass LibreOffice its progress indicator when it writes the result:
   * only the PDF export's calls are read, and each is a round trip from LibreOffice to the
   * bridge's process (a one-page letter's export: three calls, about 1.5 ms of its 10). Never
   * while it loads: nothing reads a load's calls.
   */
  exportIndicator: boolean;
  /** Aborts when the PDF export stalled (ConversionFailure('timeout'), saying on which page). */
  signal: AbortSignal;
  stalled: () => boolean;
  onEvent: (event: unknown) => void;
  stop: () => void;
}

/**
 * Reads what LibreOffice told the bridge's progress indicator. Watched for a stall is only where
 * LibreOffice can be seen to advance: its PDF export, which starts the indicator with the page
 * count and sets it at every page. Everywhere else it says nothing for long stretches of real
 * work (measured on LibreOffice 7.4, two cores): a docx, doc or rtf loads without a call
 * (8-15 s for 784 pages of text), the layout before the PDF export is silent (5-9 s for the same),
 * and a 1,000,000-row sheet's xlsx export sat 37 s on one value of its indicator before it ended,
 * successfully. Those phases are bounded by the time limit alone. The window counts the clock
 * (soffice's processor time, read by a thread of the bridge, was tried: no reading came during a
 * stuck export), so a machine crowded by other work shortens it in effect. The export's pages are the conversion's progress too (`onProgress`).
 */
export function officeProgress(target: string, stallMs: number | undefined, onProgress: (percent: number) => void): OfficeProgress {
  let pages = 0;
  let page: number | undefined;
  let exporting = false;
  const watch = new ProgressWatch({
    stallMs,
    watching: false,
    describe: () => `LibreOffice's PDF export got no further than page ${Math.min(pages, (page ?? 0) + 1)} of ${pages}`,
  });
  return {
    exportIndicator: target === 'pdf',
    signal: watch.signal,
    stalled: () => watch.stalled,
    stop: () => watch.stop(),
    onEvent(event) {
      // The bridge passes the indicator to a PDF export only (`exportIndicator`): every call is the export's.
      if (!isIndicatorEvent(event) || target !== 'pdf') return;
      if (event.progress === 'start' && typeof event.range === 'number' && event.range > 0) {
        pages = event.range;
        page = undefined;
        exporting = true;
        watch.watch(true);
      } else if (event.progress === 'value' && exporting && typeof event.value === 'number' && event.value !== page) {
        page = event.value;
        watch.advanced();
        onProgress(Math.min(99, (100 * (page + 1)) / pages));
      } else if (event.progress === 'end') {
        exporting = false;
        watch.watch(false);
      }
    },
  };
}
