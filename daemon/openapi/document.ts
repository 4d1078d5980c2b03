import { ERROR_STATUS, type ApiErrorCode } from '../../src/errors/codes.ts';
import { COMMON_ERRORS, type HeaderName, type ResponseDoc, type RouteDoc } from '../routes/table.ts';
import { SCHEMAS, type JsonSchema } from './schemas.ts';

const HEADERS: Record<HeaderName, { description: string; schema: JsonSchema }> = {
  Location: { description: 'Address of the conversion, to poll.', schema: { type: 'string', format: 'uri' } },
  'RateLimit-Limit': { description: "Requests per minute of the key's plan.", schema: { type: 'integer' } },
  'RateLimit-Remaining': { description: 'Requests left in the current window.', schema: { type: 'integer' } },
  'RateLimit-Reset': { description: 'Seconds until the window is full again.', schema: { type: 'integer' } },
  'Retry-After': { description: 'Seconds to wait before trying again.', schema: { type: 'integer' } },
  'Content-Disposition': { description: 'attachment, with the result file name (RFC 6266).', schema: { type: 'string' } },
  'Content-Range': { description: 'The range sent, e.g. `bytes 0-1023/4096`.', schema: { type: 'string' } },
  'Content-Language': { description: 'Language of error messages (from Accept-Language).', schema: { type: 'string' } },
};

const headerRefs = (names: readonly HeaderName[]) => Object.fromEntries(names.map((name) => [name, { $ref: `#/components/headers/${name}` }]));

function success(doc: ResponseDoc, keyed: boolean): JsonSchema {
  const headers: HeaderName[] = [...(doc.headers ?? []), ...(keyed ? (['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset', 'Content-Language'] as const) : [])];
  const content = doc.binary
    ? { 'application/octet-stream': { schema: { type: 'string', contentMediaType: 'application/octet-stream' } } }
    : { 'application/json': { schema: doc.schema ? { $ref: `#/components/schemas/${doc.schema}` } : { type: 'object' } } };
  return { description: doc.description, ...(headers.length > 0 ? { headers: headerRefs(headers) } : {}), content };
}

/** One response per HTTP status, listing the codes it can carry. */
function errorResponses(codes: readonly ApiErrorCode[]): Record<string, JsonSchema> {
  const byStatus = new Map<number, ApiErrorCode[]>();
  for (const code of new Set(codes)) {
    const status = ERROR_STATUS[code];
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  const out: Record<string, JsonSchema> = {};
  for (const [status, list] of [...byStatus].sort((a, b) => a[0] - b[0])) {
    const retry = status === 429 || status === 503;
    out[String(status)] = {
      description: `Error: ${list.join(', ')}.`,
      headers: headerRefs(retry ? ['Retry-After', 'Content-Language'] : ['Content-Language']),
      content: {
        'application/json': {
          schema: {
            allOf: [
              { $ref: '#/components/schemas/Error' },
              { type: 'object', properties: { error: { type: 'object', properties: { code: { enum: list } } } } },
            ],
          },
        },
      },
    };
  }
  return out;
}

/**
 * The OpenAPI 3.1 document of the interface, built from the route table the daemon registers
 * and the schemas of daemon/openapi/schemas.ts. `serverUrl` is the public base ending in /v1.
 */
export function buildOpenApi(routes: readonly RouteDoc[], options: { serverUrl: string; version: string }): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const path = route.path.slice('/v1'.length).replace(/:(\w+)/g, '{$1}');
    const keyed = route.scope !== null;
    const responses: Record<string, JsonSchema> = {};
    for (const [status, doc] of Object.entries(route.responses)) responses[status] = success(doc, keyed);
    Object.assign(responses, errorResponses([...route.errors, ...(keyed ? COMMON_ERRORS : [])]));
    (paths[path] ??= {})[route.method.toLowerCase()] = {
      operationId: route.operationId,
      summary: route.summary,
      ...(route.description ? { description: route.description } : {}),
      tags: [route.tag],
      security: keyed ? [{ apiKey: [] }] : [],
      ...(keyed ? { 'x-required-scope': route.scope } : {}),
      ...(route.parameters ? { parameters: route.parameters } : {}),
      ...(route.requestBody
        ? {
            requestBody: {
              required: true,
              description: route.requestBody.description,
              content: Object.fromEntries(route.requestBody.contentTypes.map((type) => [
                type,
                {
                  schema: { $ref: `#/components/schemas/${route.requestBody!.schema}` },
                  ...(type === 'multipart/form-data' ? { encoding: { file: { contentType: 'application/octet-stream, */*' } } } : {}),
                },
              ])),
            },
          }
        : {}),
      responses,
    };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'convd: file conversion interface',
      version: '1.0.0',
      description: 'The /v1 HTTP interface of convd, a self-hosted file conversion service. Every operation except this document needs `Authorization: Bearer <API key>`; errors have one shape, `{"error":{"code","message","details?"}}`.',
      license: { name: 'MIT', identifier: 'MIT' },
      'x-convd-version': options.version,
    },
    servers: [{ url: options.serverUrl }],
    tags: [
      { name: 'Conversions', description: 'Submit, poll, wait, list, cancel and download.' },
      { name: 'Formats', description: 'What converts to what, with options and prices.' },
      { name: 'Account', description: 'Plan, credits and limits of the key.' },
      { name: 'Interface', description: 'This description.' },
    ],
    security: [{ apiKey: [] }],
    paths,
    components: {
      schemas: SCHEMAS,
      headers: HEADERS,
      securitySchemes: { apiKey: { type: 'http', scheme: 'bearer', description: 'An API key, `cvk_...` (`convd keys create`).' } },
    },
  };
}
