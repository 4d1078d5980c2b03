import { promisify } from 'node:util';
import { deflate } from 'node:zlib';
import { PDFImage, PngEmbedder, type PDFContext, type PDFDocument, type PDFRef } from 'pdf-lib';
import type { Sharp } from 'sharp';

const deflated = promisify(deflate);

/**
 * An image put into the PDF as its pixels: decoded by libvips and compressed by zlib, both native
 * and off the event loop, with its alpha as a soft mask. pdf-lib's own PNG embedding decodes in
 * JavaScript: an 8000x8000 PNG held about 790 MB and 8-10 s of the engine host, past its memory
 * limit once a heap grown by earlier conversions was added. Lossless, like the PNG it replaces.
 *
 * `pixels` makes the decoding pipeline (sRGB, upright); it is run once for the colour and, when
 * `hasAlpha`, once more for the mask, so that the two are never held decoded at the same time.
 */
export async function embedPixels(pdf: PDFDocument, pixels: () => Sharp, hasAlpha: boolean): Promise<PDFImage> {
  const colour = await pixels().removeAlpha().raw({ depth: 'uchar' }).toBuffer({ resolveWithObject: true });
  const { width, height, channels } = colour.info;
  const colourStream = await deflated(colour.data);
  const alpha = hasAlpha ? await deflated((await pixels().extractChannel('alpha').raw({ depth: 'uchar' }).toBuffer())) : undefined;
  // PDFImage takes only pdf-lib's own embedders (an instanceof check): this one is a PngEmbedder
  // whose fields and embedding are its own.
  const embedder: PngEmbedder = Object.assign(Object.create(PngEmbedder.prototype) as PngEmbedder, {
    width,
    height,
    async embedIntoContext(context: PDFContext, ref?: PDFRef): Promise<PDFRef> {
      const image = { Type: 'XObject', Subtype: 'Image', Width: width, Height: height, BitsPerComponent: 8, Filter: 'FlateDecode' };
      const mask = alpha ? context.register(context.stream(alpha, { ...image, ColorSpace: 'DeviceGray' })) : undefined;
      const xobject = context.stream(colourStream, { ...image, ColorSpace: channels === 1 ? 'DeviceGray' : 'DeviceRGB', ...(mask ? { SMask: mask } : {}) });
      if (!ref) return context.register(xobject);
      context.assign(ref, xobject);
      return ref;
    },
  });
  const image = PDFImage.of(pdf.context.nextRef(), pdf, embedder);
  await image.embed();
  return image;
}
