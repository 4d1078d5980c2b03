import type { PublicConversion } from './conversion.ts';

/** One page of GET /v1/conversions: newest first, `next_cursor` null on the last page. */
export interface ListPage { data: PublicConversion[]; next_cursor: string | null }
