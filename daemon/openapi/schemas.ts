import { ERROR_STATUS, CONVERSION_ERROR_CODES } from '../../src/errors/codes.ts';
import { STATUSES } from '../../src/model/status.ts';

/**
 * The objects of the interface (spec section 2) as JSON Schema (2020-12, the dialect of
 * OpenAPI 3.1), defined once: the OpenAPI document's `components.schemas` is this table, and
 * the tests check live answers against it, so a field added to an answer and not here (or the
 * other way round) fails a test. Objects are closed (`additionalProperties: false`) for that
 * reason, except where the spec leaves them open (options, error details).
 */
export type JsonSchema = { [keyword: string]: unknown };

// Names are checked where it matters: the OpenAPI validator resolves every $ref in the tests.
const ref = (name: string): JsonSchema => ({ $ref: `#/components/schemas/${name}` });
const nullable = (schema: JsonSchema): JsonSchema => ({ oneOf: [schema, { type: 'null' }] });
const dateTime: JsonSchema = { type: 'string', format: 'date-time' };
const uri: JsonSchema = { type: 'string', format: 'uri' };
const count: JsonSchema = { type: 'integer', minimum: 0 };

/** A closed object whose `optional` properties may be left out. */
function closedWithOptional(properties: Record<string, JsonSchema>, optional: readonly string[], description?: string): JsonSchema {
  return { ...closed(properties, description), required: Object.keys(properties).filter((name) => !optional.includes(name)) };
}

function closed(properties: Record<string, JsonSchema>, description?: string): JsonSchema {
  return {
    type: 'object',
    ...(description ? { description } : {}),
    properties,
    required: Object.keys(properties),
    additionalProperties: false,
  };
}

const optionValue: JsonSchema = { type: ['string', 'number', 'boolean'] };

export const SCHEMAS = {
  ConversionStatus: { type: 'string', enum: [...STATUSES], description: 'Spec section 3.' },
  Result: closed({
    filename: { type: 'string' },
    size: count,
    mime: { type: 'string' },
    expires_at: dateTime,
    download_url: { ...uri, description: 'The download endpoint of the conversion.' },
  }, 'The result of a conversion that succeeded.'),
  ConversionWarning: closed({
    code: { type: 'string', enum: ['font_substituted', 'metadata_dropped', 'content_left_out'] },
    font: { type: 'string', description: 'font_substituted: the font the document names.' },
    used: { type: 'string', description: 'font_substituted: the font its text was set in.' },
    field: { type: 'string', description: 'metadata_dropped: the document information field left out.' },
    reference: { type: 'string', description: 'content_left_out: the file or address as the document names it.' },
    message: { type: 'string' },
  }, 'This service\'s own: something to know of a result. `font_substituted`: a font the document names is not installed and has no metric-compatible face here, so lines and pages may break elsewhere than where its author saw them. `metadata_dropped`: a field of the document information (title, author, ...) the target format could not keep (text beyond Latin-1 in a PDF/A). `content_left_out`: a file the document includes (rst `include`, LaTeX `\\input`, Org `#+INCLUDE`), an image it shows by path or address, or an image, stylesheet, font or video a web page asks for, which was not among the files sent or not fetched: that part is missing from the result.'),
  ConversionError: {
    ...closed({
      code: { type: 'string', enum: [...CONVERSION_ERROR_CODES] },
      message: { type: 'string' },
      details: {
        type: 'object',
        additionalProperties: { type: ['string', 'number'] },
        description: 'Optional, this service\'s own: figures of the failure where they help a program, e.g. `width`, `height`, `pixels` and `limit` for an image over the pixel limit, `pages` and `page` for a page that does not exist.',
      },
    }, 'Why a conversion failed (or was lost in a crash).'),
    required: ['code', 'message'],
  },
  Conversion: closedWithOptional({
    id: { type: 'string', pattern: '^cnv_[0-9a-z]+$' },
    object: { const: 'conversion' },
    status: ref('ConversionStatus'),
    source: { type: 'string' },
    target: { type: 'string' },
    variant: { type: ['string', 'null'] },
    options: { type: 'object', additionalProperties: optionValue, description: 'The options that were applied.' },
    original_name: { type: 'string' },
    input_size: { type: ['integer', 'null'], minimum: 0 },
    inputs: {
      type: 'array',
      items: closed({ name: { type: 'string' }, size: { ...count }, format: { type: 'string' } }),
      description: 'This service\'s own, additive: the files of a merge (several `file` parts to target pdf), in the order they were merged; absent for one input. `original_name` is the first\'s, `input_size` their sum.',
    },
    progress: { type: ['integer', 'null'], minimum: 0, maximum: 100 },
    credits: { ...count, description: 'Credits charged: 0 unless it succeeded.' },
    created_at: dateTime,
    started_at: nullable(dateTime),
    finished_at: nullable(dateTime),
    result: nullable(ref('Result')),
    warnings: { type: 'array', items: ref('ConversionWarning'), description: 'This service\'s own, additive: what to know of a result (empty for most).' },
    error: nullable(ref('ConversionError')),
    links: closed({ self: uri, download: uri }),
  }, ['inputs'], 'A conversion.'),
  ConversionRequest: {
    type: 'object',
    description: 'Spec 2.3. Exactly one of `file` (multipart only) and `url`; with target `pdf`, several `file` parts (at most 50) are merged into one PDF in the order sent (an extension), each converted to PDF first where it is not one. Options may also be sent flat (`quality=80`) or as `options[quality]=80`.',
    properties: {
      target: { type: 'string', description: 'Target format.' },
      file: { type: 'string', contentMediaType: 'application/octet-stream', description: 'The file to convert (multipart/form-data only).' },
      url: { ...uri, description: 'Public http(s) URL the service downloads the input from.' },
      source: { type: 'string', description: 'Source format, when the file name or URL does not reveal it.' },
      filename: { type: 'string', description: 'Name to give a URL input.' },
      variant: { type: 'string', description: 'Mode, for conversions that have several (see the format details).' },
      options: { type: 'object', additionalProperties: optionValue },
      callback_url: { ...uri, description: 'https only: receives a signed webhook when the conversion succeeds or fails.' },
      wait: { type: 'integer', minimum: 0, maximum: 30, description: 'Seconds to wait for the end state before answering.' },
    },
    required: ['target'],
    additionalProperties: optionValue,
  },
  ListPage: closed({
    data: { type: 'array', items: ref('Conversion') },
    next_cursor: { type: ['string', 'null'], description: 'Pass as `cursor` for the next page; null on the last.' },
  }, 'A page of conversions, newest first.'),
  FormatListing: closed({
    data: { type: 'array', items: closed({ source: { type: 'string' }, targets: { type: 'array', items: { type: 'string' } } }) },
  }, 'Every source format and its targets.'),
  OptionDescriptor: {
    type: 'object',
    properties: {
      name: { type: 'string' },
      type: { type: 'string', enum: ['range', 'number', 'enum', 'bool', 'text'] },
      values: { type: 'array', items: { type: 'string' } },
      min: { type: 'number' },
      max: { type: 'number' },
      pattern: { type: 'string' },
      secret: { type: 'boolean' },
      file: { type: 'boolean' },
      requires: { type: 'array', items: { type: 'string' } },
      excludes: { type: 'array', items: { type: 'string' } },
      default: { type: ['string', 'number', 'boolean', 'null'] },
      label: { type: 'string' },
    },
    required: ['name', 'type', 'values', 'default', 'label'],
    additionalProperties: false,
    description: 'An option of a conversion; `min`/`max` for range and number, `values` for enum. `text` (this service\'s own type): `max` is its length, `pattern` its form; a `secret` one (a password) is never shown with the conversion; a `file` one names a file sent in the same multipart request as another `file` part (an image drawn as a watermark), which is not converted. `requires`: given only beside one of these options; `excludes`: never beside any of them.',
  },
  FormatDetails: closed({
    source: { type: 'string' },
    data: {
      type: 'array',
      items: closed({
        target: { type: 'string' },
        max_upload_mb: { type: 'integer', minimum: 1 },
        credit_weight: count,
        options: { type: 'array', items: ref('OptionDescriptor') },
        variants: { type: 'array', items: closed({ key: { type: 'string' }, label: { type: 'string' } }) },
      }),
    },
  }, 'The targets of one source format with options, variants, limits and prices.'),
  Account: closed({
    plan: closed({ id: { type: 'string' }, name: { type: 'string' } }),
    credits: closed({
      type: { type: 'string', enum: ['plan_credits', 'free_api_credits', 'unmetered'] },
      remaining: { type: ['integer', 'null'] },
      monthly_allowance: count,
      resets_at: nullable(dateTime),
    }),
    limits: closed({
      max_upload_mb: count,
      conversions_per_window: count,
      window_seconds: count,
      concurrent_conversions: count,
      active_conversions: count,
      requests_per_minute: count,
      result_ttl_hours: count,
      time_limits: {
        type: 'object', additionalProperties: count,
        description: 'Seconds a conversion may run, per engine kind (image, office, media, ...); past it the conversion fails with `timeout`. Added to the spec.',
      },
    }),
    engine_time: closed({
        allowance_seconds: { ...count, description: 'Engine time per clock hour (UTC) for the conversions submitted in it; 0: no allowance.' },
        used_seconds: { ...count, description: 'What this hour\'s conversions have used, whether they succeeded or failed.' },
        remaining_seconds: { type: ['integer', 'null'], description: 'Null without an allowance; at 0 a submission gets 429 `engine_time_exhausted` with `Retry-After`.' },
        resets_at: dateTime,
    }, 'Added to the spec: the hourly engine-time allowance and what is left of it.'),
  }, "The key's account: plan, credits and limits."),
  Error: closed({
    error: {
      type: 'object',
      properties: {
        code: { type: 'string', enum: Object.keys(ERROR_STATUS), description: 'Stable and machine-readable.' },
        message: { type: 'string', description: 'For people, in the language of Accept-Language.' },
        details: { type: 'object', description: 'Optional; `max_upload_mb` for file_too_large, `fields` for validation_failed, `limit` for rate limits, `reason` for api_disabled (`low_disk_space`, `shutting_down`), `limit` (`upload_idle_timeout` or `request_timeout`) and `seconds` for request_timeout.' },
      },
      required: ['code', 'message'],
      additionalProperties: false,
    },
  }, 'The one error shape.'),
} satisfies Record<string, JsonSchema>;

export type SchemaName = keyof typeof SCHEMAS;
