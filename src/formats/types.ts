/**
 * The registry's vocabulary, from where each lives: a pair and a format are what an engine
 * declares (engines/), an option or variant descriptor a public API shape (model/).
 */
export type { ConversionKind, ConversionPair, FormatInfo } from '../engines/types.ts';
export type { OptionDescriptor, OptionType, VariantDescriptor } from '../model/formats.ts';
