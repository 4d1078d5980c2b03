import type { OptionDescriptor, VariantDescriptor } from '../model/formats.ts';

/*
 * What an engine declares of itself: the pairs it converts, their options and variants, and the
 * formats it introduces. Engine types, so that engines import nothing from formats/: the format
 * registry (formats/registry.ts) composes them, downwards.
 */

/** Option and variant descriptors are public API shapes (FormatDetails holds them) and live in model/. */
export type { OptionDescriptor, OptionType, VariantDescriptor } from '../model/formats.ts';

/**
 * Kinds of conversion; each has a credit weight (by default: image 1, pdf 1, data 1, audio 2,
 * document 2 (office, markup, PDF pages), video 4, ocr 3).
 */
export type ConversionKind = 'image' | 'pdf' | 'data' | 'audio' | 'document' | 'video' | 'ocr';

/** Where a step declared `onOption` runs beside the pair it joins. */
export type OptionalStepPlace = 'before' | 'after' | 'instead';

/** One supported (source, target) pair, and what it takes. */
export interface ConversionPair {
  source: string;
  target: string;
  /** Name of the engine that runs it (`Engine.name`). */
  engine: string;
  kind: ConversionKind;
  options: OptionDescriptor[];
  /** Empty when the conversion has a single mode; otherwise the first is the default. */
  variants: VariantDescriptor[];
  /**
   * The engine declares its result a faithful step for another engine to go on from (an office
   * document's PDF, Markdown's docx, a table's CSV): the registry may compose a chain through it.
   */
  intermediate?: boolean;
  /**
   * Targets that, from this intermediate, a chain makes better than another engine's direct pair:
   * where the chain can be composed it takes the pair's place (csv -> html -> pdf, a table
   * Chromium prints, over LibreOffice's sheet); where it cannot (no Chromium) the direct pair stays.
   */
  preferredFor?: string[];
  /** The only targets chains make through this intermediate (unset: any the next engine makes). */
  intermediateFor?: string[];
  /**
   * Never a chain's second step: the pair describes its input (pdf -> json, a PDF's facts), and
   * the facts of a PDF made from another file (a docx's) are not that file's data.
   */
  describesInput?: boolean;
  /**
   * Its engine reads a merge's PDFs from their stored bundle itself (EngineJob.bundledInputs):
   * small ones need not be written out as files first.
   */
  readsBundles?: boolean;
  /** A composed pair (engine `chain`): the direct pairs it runs, in order. */
  steps?: ConversionPair[];
  /**
   * Declared by an engine: not offered on its own, only as the fallback of another engine's pair
   * of the same source and target (Chromium setting text that the PDF engine's font lacks).
   */
  fallbackOnly?: boolean;
  /** Set by the registry: the pair that converts a file this pair's engine hands over (HandOver). */
  fallback?: ConversionPair;
  /**
   * Declared by an engine: not offered on its own, a step of the pair another engine serves for the
   * same source and target, run when the conversion sets the boolean option `option` (OCR before a
   * PDF's operations, after an image's PDF, instead of reading a PDF's text layer). The pair it
   * joins offers its options beside its own. `before` and `instead` take the pair's source;
   * `after` takes the PDF the pair makes, whatever the pair's source (the step's engine reads it as
   * `pdf`).
   */
  onOption?: { option: string; place: OptionalStepPlace };
  /**
   * Set by the registry: the pair that runs instead of this one when the conversion sets `option`
   * (a chain of this pair and an `onOption` step, or that step alone), as FormatRegistry.pairFor
   * picks it.
   */
  withOption?: { option: string; pair: ConversionPair };
}

/** What is known of one format: its file extensions (first is canonical) and MIME type. */
export interface FormatInfo {
  key: string;
  extensions: string[];
  mime: string;
}
