import type { ConversionPair } from '../engines/pairs.ts';
import type { FormatRegistry } from '../formats/registry.ts';
import type { Plan } from '../model/plan.ts';
import { fieldError } from './create-request.ts';

/**
 * A file over the plan's OCR pages (max_ocr_pages) for an engine that counts the pages it would
 * read (OCR: Engine.pagesOf) is refused at submission, with the cap in the words, rather than charged a
 * place in the queue and failed later. An engine that cannot tell (an encrypted PDF) leaves it to
 * the run, which checks again.
 */
export async function checkPageCap(registry: FormatRegistry, pair: ConversionPair, pathOf: () => Promise<string>, plan: Plan): Promise<void> {
  const names = new Set((pair.steps ?? [pair]).map((step) => step.engine));
  for (const name of names) {
    const engine = registry.engine(name);
    if (!engine?.pagesOf) continue;
    // A count that fails is no count: the run checks again.
    const pages = await engine.pagesOf(await pathOf(), pair.source).catch(() => undefined);
    if (pages !== undefined && pages > plan.max_ocr_pages) {
      throw fieldError('file', `${pages} pages; OCR reads at most ${plan.max_ocr_pages} pages in one conversion on the ${plan.name} plan`);
    }
  }
}
