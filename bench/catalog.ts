import { benchConvBatch, benchConvFormats, benchConvVersion } from './cli.ts';
import { benchClusterNodes } from './cluster-nodes.ts';
import { benchConvertEndToEnd } from './convert-e2e.ts';
import { benchEventLoopUnderAttack } from './event-loop-under-attack.ts';
import { benchFairShare } from './fair-share.ts';
import { benchGetThroughput } from './get-throughput.ts';
import { benchHealthzUnderChromium } from './healthz-under-chromium.ts';
import { benchHtml } from './html.ts';
import { benchLargeText } from './large-text.ts';
import { benchLoad } from './load.ts';
import { benchMemorySoak } from './memory-soak.ts';
import { benchOcrPdf } from './ocr-pdf.ts';
import { benchOfficeCold, benchOfficeWarm } from './office.ts';
import { benchPdfAllPages } from './pdf-all-pages.ts';
import { benchPdfMerge } from './pdf-merge.ts';
import { benchPdfPages } from './pdf-pages.ts';
import { benchPostgresGetThroughput } from './postgres-get-throughput.ts';
import { benchPostgresSubmitLatency } from './postgres-submit.ts';
import { benchServiceCost } from './service-cost.ts';
import { benchSubmitLatency } from './submit-latency.ts';
import { benchUploadRss } from './upload-rss.ts';
import { benchVideo } from './video.ts';
import type { BenchResult } from './types.ts';

export interface Bench {
  /** What it measures; `npm run bench -- <name>` runs it. */
  name: string;
  /** The letter it was known by first, still taken in place of the name. */
  letter: string;
  /** One line for `npm run bench -- --list`. */
  measures: string;
  run: () => Promise<BenchResult>;
}

/** Every bench, in the order a full run takes them. */
export const BENCHES: readonly Bench[] = [
  { name: 'get-throughput', letter: 'a', measures: 'GET /v1/conversions/{id} throughput against a bare node:http server', run: benchGetThroughput },
  { name: 'convert-e2e', letter: 'b', measures: '200 PNG -> WebP end to end through the daemon against sharp called directly', run: benchConvertEndToEnd },
  { name: 'submit-latency', letter: 'c', measures: 'submission latency with 100,000 conversions stored against an empty store', run: benchSubmitLatency },
  { name: 'upload-rss', letter: 'd', measures: 'the daemon\'s RSS while it receives a 1 GiB upload against its idle RSS', run: benchUploadRss },
  { name: 'video', letter: 'e', measures: 'a 10 s 720p video -> mp4 through the daemon against the same ffmpeg command', run: benchVideo },
  { name: 'conv-version', letter: 'f', measures: '`conv --version` start-up against `node -e 0`', run: benchConvVersion },
  { name: 'conv-formats', letter: 'g', measures: '`conv formats --json` start-up (in-process) against `node -e 0`', run: benchConvFormats },
  { name: 'conv-batch', letter: 'h', measures: '100 PNG -> WebP in one in-process `conv convert` against ImageMagick', run: benchConvBatch },
  { name: 'mixed-load', letter: 'i', measures: '60 s of mixed submissions, polls, downloads and listings from a second process', run: benchLoad },
  { name: 'office-cold', letter: 'j', measures: '20 Word documents -> PDF through convd against cold `soffice --convert-to` runs', run: benchOfficeCold },
  { name: 'office-warm', letter: 'k', measures: 'the same 20, two in flight, against a warm LibreOffice driven directly over UNO', run: benchOfficeWarm },
  { name: 'pdf-pages', letter: 'l', measures: 'PDF page 1 -> PNG through convd against PDFium and sharp called directly', run: benchPdfPages },
  { name: 'postgres-submit', letter: 'm', measures: 'submission latency with 1,000,000 conversions on PostgreSQL against lowdb (needs PostgreSQL)', run: benchPostgresSubmitLatency },
  { name: 'cluster-nodes', letter: 'n', measures: '200 PNG -> WebP over two nodes on one database and one S3 bucket against one node (needs PostgreSQL)', run: benchClusterNodes },
  { name: 'postgres-get-throughput', letter: 'o', measures: 'get-throughput on PostgreSQL against lowdb (needs PostgreSQL)', run: benchPostgresGetThroughput },
  { name: 'html-invoices', letter: 'p', measures: '20 HTML invoices -> PDF in both HTML modes against Chromium driven directly and a cold chromium per file', run: benchHtml },
  { name: 'memory-soak', letter: 'q', measures: 'the daemon\'s RSS over 300 large images with deploy/convd.service\'s allocator against glibc\'s malloc', run: benchMemorySoak },
  { name: 'event-loop-under-attack', letter: 'r', measures: 'the daemon\'s event-loop delay while hostile conversions run against without them', run: benchEventLoopUnderAttack },
  { name: 'large-text', letter: 's', measures: '1 MiB of text and of Markdown to five document formats against the fastest direct tool', run: benchLargeText },
  { name: 'healthz-under-chromium', letter: 't', measures: '/healthz and a keyed GET under 16 hostile Chromium pages against an idle daemon', run: benchHealthzUnderChromium },
  { name: 'fair-share', letter: 'u', measures: 'a fourth account\'s small conversions while three keep every engine busy against an idle daemon', run: benchFairShare },
  { name: 'pdf-all-pages', letter: 'v', measures: 'a 20-page PDF -> a zip of PNGs at 150 dpi through convd against PDFium, sharp and yazl called directly', run: benchPdfAllPages },
  { name: 'pdf-merge', letter: 'w', measures: '50 one-page PDFs merged into one through convd against qpdf (WebAssembly) called directly', run: benchPdfMerge },
  { name: 'ocr-pdf', letter: 'x', measures: 'a 10-page scanned PDF -> searchable PDF (ocr=true) through convd against OCRmyPDF run directly with the engine\'s arguments', run: benchOcrPdf },
  { name: 'service-cost', letter: 'y', measures: 'the daemon\'s own CPU per read, download, upload and small conversion against a bare node:http server answering the same bytes (and sharp)', run: benchServiceCost },
];

/** The bench a command-line word names: its name, or its letter. */
export function benchNamed(word: string): Bench | undefined {
  return BENCHES.find((bench) => bench.name === word || bench.letter === word);
}
