import { PDFDocument } from 'pdf-lib';
import sharp from 'sharp';

/** Lines of words in DejaVu Sans, drawn black on white as a page of a scanner would give them. */
export async function scannedLines(lines: readonly string[], options: { width?: number; size?: number } = {}): Promise<Buffer> {
  const width = options.width ?? 1700;
  const size = options.size ?? 42;
  const height = 120 + lines.length * size * 1.6;
  const escape = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;');
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${Math.round(height)}"><rect width="100%" height="100%" fill="white"/>`
    + lines.map((line, i) => `<text x="80" y="${Math.round(100 + i * size * 1.6)}" font-family="DejaVu Sans" font-size="${size}">${escape(line)}</text>`).join('')
    + '</svg>';
  return sharp(Buffer.from(svg)).flatten({ background: 'white' }).jpeg({ quality: 90 }).withMetadata({ density: 300 }).toBuffer();
}

/**
 * An image-only PDF: the picture on every one of `pages` pages at 300 dpi (a pixel is 0.24 pt), no
 * text layer, as a scanner's PDF has it.
 */
export async function scannedPdf(jpeg: Buffer, pages = 1): Promise<Buffer> {
  const doc = await PDFDocument.create();
  const image = await doc.embedJpg(jpeg);
  const width = (image.width * 72) / 300;
  const height = (image.height * 72) / 300;
  for (let i = 0; i < pages; i++) doc.addPage([width, height]).drawImage(image, { x: 0, y: 0, width, height });
  return Buffer.from(await doc.save());
}
