/**
 * What the OCR suite reads and how it scores a reading: ordinary English and German paragraphs
 * (rendered into page images by the suite itself), and word recall, the share of a text's words
 * found in what OCR made of it, counted as a multiset (a word the text has three times must be
 * read three times), after lowercasing and with punctuation taken away.
 */

/** Page one of the English fixtures (set in DejaVu Serif): 111 words. */
export const ENGLISH_HARBOUR = [
  'The quiet harbour town woke slowly under a grey sky while the fishing boats returned with their',
  'morning catch. Children walked along the narrow streets toward the old stone school, carrying',
  'books and small lunches wrapped in brown paper. Near the market square, a baker opened his',
  'wooden shutters and placed fresh bread on the long table by the window. An elderly couple sat',
  'on a bench and watched the gulls circle above the water, talking about the weather and the',
  'coming summer. Later that day the ferry from the island arrived with visitors, bicycles and',
  'letters, and the harbour master wrote every name in his heavy green book before noon.',
].join(' ');

/** Page two of the English fixtures (set in DejaVu Sans): 103 words. */
export const ENGLISH_LIBRARY = [
  'Every Thursday evening the public library stays open until nine, and the reading room fills with',
  'students, retired teachers and people who simply want a warm place to sit. The librarian keeps a',
  'list of new arrivals on the board beside the entrance: travel guides, cookery books, a history',
  'of the railway and several novels by local writers. Volunteers help visitors find articles in old',
  'newspapers, repair torn pages and carry heavy boxes from the storage room. When the clock above',
  'the door strikes nine, the lights are switched off one by one and the last readers walk home',
  'through the quiet park.',
].join(' ');

/** A German paragraph with umlauts and ß (set in DejaVu Sans, read with language deu): 85 words. */
export const GERMAN_TRAMS = [
  'Größere Übungen für Straßenbahnfahrer finden jeden Dienstag früh im großen Depot statt. Die',
  'Fahrer üben das Bremsen auf nassen Schienen, das Öffnen der Türen bei Störungen und die höfliche',
  'Begrüßung älterer Fahrgäste. Außerdem müssen sie wissen, wie man einen Rollstuhl sicher über die',
  'Rampe führt und wann die Weichen gewartet werden. Nach der Prüfung gibt es Kaffee, Brötchen und',
  'süßen Kuchen in der gemütlichen Küche. Wer die Übung bestanden hat, erhält eine Urkunde und darf',
  'im nächsten Monat allein durch die Straßen der Stadt fahren.',
].join(' ');

/** A text's words: NFKC (ligatures and combining marks as one letter), lowercase, no punctuation. */
export function wordsOf(text: string): string[] {
  return text.normalize('NFKC').toLowerCase().split(/[^\p{L}\p{N}]+/u).filter(Boolean);
}

export interface Recall {
  /** found / total, 0..1. */
  share: number;
  found: number;
  total: number;
  /** The expected words not read, in the text's order (a word missing twice is listed twice). */
  missing: string[];
}

/** The share of `expected`'s words found in `read`, each occurrence counted once (a multiset). */
export function wordRecall(expected: string, read: string): Recall {
  const have = new Map<string, number>();
  for (const word of wordsOf(read)) have.set(word, (have.get(word) ?? 0) + 1);
  const words = wordsOf(expected);
  const missing: string[] = [];
  for (const word of words) {
    const left = have.get(word) ?? 0;
    if (left > 0) have.set(word, left - 1);
    else missing.push(word);
  }
  const found = words.length - missing.length;
  return { share: words.length === 0 ? 1 : found / words.length, found, total: words.length, missing };
}

/** A recall as the suite's diagnostics print it: `98.9 % (89/90 words), missing: x, y`. */
export function describeRecall(recall: Recall): string {
  const share = `${(recall.share * 100).toFixed(1)} % (${recall.found}/${recall.total} words)`;
  return recall.missing.length === 0 ? share : `${share}, missing: ${recall.missing.join(', ')}`;
}
