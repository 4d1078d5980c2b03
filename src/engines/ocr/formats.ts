import type { ConversionPair, FormatInfo, OptionDescriptor } from '../pairs.ts';

/** Images Tesseract reads itself (a TIFF's every page) and the image engine makes PDFs of. */
export const OCR_IMAGE_SOURCES = ['png', 'jpg', 'tiff', 'webp', 'bmp'] as const;

/** How pages that already hold text are treated: OCRmyPDF's --skip-text, --redo-ocr, --force-ocr. */
export const OCR_MODES = ['skip', 'redo', 'force'] as const;
export type OcrMode = (typeof OCR_MODES)[number];

export const OCR_FORMATS: FormatInfo[] = [
  { key: 'pdf', extensions: ['pdf'], mime: 'application/pdf' },
  { key: 'txt', extensions: ['txt', 'text'], mime: 'text/plain' },
  { key: 'png', extensions: ['png'], mime: 'image/png' },
  { key: 'jpg', extensions: ['jpg', 'jpeg', 'jpe', 'jfif'], mime: 'image/jpeg' },
  { key: 'tiff', extensions: ['tiff', 'tif'], mime: 'image/tiff' },
  { key: 'webp', extensions: ['webp'], mime: 'image/webp' },
  { key: 'bmp', extensions: ['bmp', 'dib'], mime: 'image/bmp' },
];

/** The language the text is read in where none is asked for: English where installed, else the first. */
export function defaultLanguage(languages: readonly string[]): string {
  return languages.includes('eng') ? 'eng' : languages[0]!;
}

/** `language`: one or more of the installed languages, joined by `+` (Tesseract's own form). */
export function languageOption(languages: readonly string[], requires?: string[]): OptionDescriptor {
  const one = `(?:${languages.join('|')})`;
  return {
    name: 'language', type: 'text', values: [], max: 200, pattern: `${one}(?:\\+${one})*`, default: null,
    label: `Languages of the text, joined by + (deu+eng): ${languages.join(', ')} are installed (default ${defaultLanguage(languages)})`,
    ...(requires ? { requires } : {}),
  };
}

const bool = (name: string, label: string, requires?: string[]): OptionDescriptor => ({
  name, type: 'bool', values: [], default: null, label, ...(requires ? { requires } : {}),
});

/** What OCRmyPDF does to each page before reading it. */
function pageOptions(requires?: string[]): OptionDescriptor[] {
  return [
    bool('deskew', 'Straighten pages scanned at a slant before reading them (the page images are replaced)', requires),
    bool('orient_pages', 'Turn pages that lie sideways or upside down upright, by the direction of their text', requires),
  ];
}

/**
 * What the engine declares, with `languages` the installed ones (the probe's): OCR joins another
 * engine's pdf -> pdf (before the operations) and image -> pdf (after the page is made) when the
 * conversion sets `ocr`; it reads a PDF's text when the PDF has no text layer (the text engine's
 * fallback) or when `ocr` forces it; and it reads images' text itself.
 */
export function ocrPairs(languages: readonly string[]): ConversionPair[] {
  const asked = ['ocr'];
  const pdfToPdf: ConversionPair = {
    source: 'pdf', target: 'pdf', engine: 'ocr', kind: 'ocr', variants: [], onOption: { option: 'ocr', place: 'before' },
    options: [
      bool('ocr', 'Read the text of scanned pages by OCR and lay it over them, invisible: a searchable PDF (first, before the other operations)'),
      { name: 'ocr_mode', type: 'enum', values: [...OCR_MODES], default: null, requires: asked, label: 'Pages that already hold text: skip them (default), redo an earlier OCR layer, or force: every page drawn as an image and read' },
      languageOption(languages, asked),
      ...pageOptions(asked),
    ],
  };
  const imageToPdf = (source: string): ConversionPair => ({
    source, target: 'pdf', engine: 'ocr', kind: 'ocr', variants: [], onOption: { option: 'ocr', place: 'after' },
    options: [bool('ocr', 'Read the text in the image by OCR and lay it over the page, invisible: a searchable PDF'), languageOption(languages, asked), ...pageOptions(asked)],
  });
  const pdfToTxt: ConversionPair = {
    source: 'pdf', target: 'txt', engine: 'ocr', kind: 'ocr', variants: [], fallbackOnly: true, onOption: { option: 'ocr', place: 'instead' },
    options: [
      bool('ocr', 'Read every page by OCR, even where the PDF has a text layer (without: only a PDF whose pages hold no text at all is read by OCR)'),
      languageOption(languages),
      ...pageOptions(),
    ],
  };
  const imageToTxt = (source: string): ConversionPair => ({
    source, target: 'txt', engine: 'ocr', kind: 'ocr', variants: [], options: [languageOption(languages)],
  });
  return [pdfToPdf, pdfToTxt, ...OCR_IMAGE_SOURCES.map(imageToPdf), ...OCR_IMAGE_SOURCES.map(imageToTxt)];
}
