import type { ConversionOptions } from '../../model/conversion.ts';
import { PDF_VERSION } from './formats.ts';

/** A value of LibreOffice's PDF export FilterData: what UNO takes as a boolean, a long or a string. */
export type FilterValue = boolean | number | string;

/**
 * LibreOffice's PDF export settings (the FilterData of writer_pdf_Export and its kin) for a
 * conversion's variant and options. Spreadsheet-only (SinglePageSheets) and presentation-only
 * (ExportNotesPages) settings are ignored by the other filters.
 */
export function pdfFilterData(variant: string | null, options: ConversionOptions): Record<string, FilterValue> {
  const data: Record<string, FilterValue> = {
    SelectPdfVersion: PDF_VERSION[variant ?? 'pdf'] ?? 0,
    ExportBookmarks: options.export_bookmarks !== false,
    ExportFormFields: options.export_form_fields !== false,
    ExportNotes: options.export_notes === true,
    ExportNotesPages: options.export_notes === true,
    SinglePageSheets: options.single_page_sheets === true,
    UseLosslessCompression: false,
    Quality: typeof options.quality === 'number' ? options.quality : 90,
  };
  if (typeof options.pages === 'string' && options.pages !== '') data.PageRange = options.pages;
  if (options.pdf_ua === true) {
    data.PDFUACompliance = true;
    data.UseTaggedPDF = true;
  }
  const resolution = options.max_image_resolution;
  if (typeof resolution === 'string' && resolution !== 'none') {
    data.ReduceImageResolution = true;
    data.MaxImageResolution = Number(resolution);
  }
  return data;
}
