/**
 * GET /v1/openapi.json: served without a key, a valid OpenAPI 3.1 document (checked by
 * @readme/openapi-parser), describing exactly the operations the daemon answers; and the
 * daemon's live answers match the document's schemas (checked with ajv), errors included.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { compileErrors, validate } from '@readme/openapi-parser';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { ROUTES } from '../../daemon/routes/table.ts';
import { convdAdmin } from '../helpers/daemon.ts';
import { call, pngUpload, smallPng, startConvd, type Answer, type Convd } from '../helpers/ops-support.ts';

// ajv-formats is CommonJS with a default export; under ESM it arrives as the module object.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (ajv: Ajv2020) => void;

type Doc = {
  openapi: string;
  servers: { url: string }[];
  paths: Record<string, Record<string, { operationId: string; security: unknown[]; responses: Record<string, { content?: Record<string, { schema: Record<string, unknown> }> }>; 'x-required-scope'?: string }>>;
  components: { schemas: Record<string, unknown> };
};

describe('GET /v1/openapi.json', () => {
  let daemon: Convd;
  let doc: Doc;
  let ajv: Ajv2020;

  before(async () => {
    daemon = await startConvd();
    const answer = await call(daemon, '/v1/openapi.json', { key: null });
    assert.equal(answer.status, 200);
    doc = answer.body as Doc;
    ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats(ajv);
    ajv.addSchema({ $id: 'convd-openapi', components: doc.components });
  });
  after(() => daemon.dispose());

  /** Checks a live answer against the schema the document gives for that operation and status. */
  function conforms(operationId: string, answer: Answer): void {
    const operation = Object.values(doc.paths).flatMap((item) => Object.values(item)).find((op) => op.operationId === operationId);
    assert.ok(operation, `no operation ${operationId}`);
    const response = operation.responses[String(answer.status)];
    assert.ok(response, `${operationId} answered ${answer.status}, which the document does not list: ${JSON.stringify(answer.body)}`);
    const schema = response.content?.['application/json']?.schema;
    assert.ok(schema, `${operationId} ${answer.status} has no JSON schema`);
    const check = ajv.compile(rewrite(schema));
    assert.ok(check(answer.body), `${operationId} ${answer.status}: ${ajv.errorsText(check.errors)}\n${JSON.stringify(answer.body, null, 2)}`);
  }

  /** The document's refs point into its own components: make them point into the added schema. */
  function rewrite(schema: unknown): Record<string, unknown> {
    return JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"convd-openapi#/components/')) as Record<string, unknown>;
  }

  it('needs no key, ignores maintenance, and is a valid OpenAPI 3.1 document', async () => {
    assert.equal(doc.openapi, '3.1.0');
    assert.equal(doc.servers[0]!.url, `${daemon.url}/v1`);
    const result = await validate(structuredClone(doc) as never);
    assert.ok(result.valid, result.valid ? '' : compileErrors(result));
    assert.equal((await convdAdmin(daemon.dataDir, ['maintenance', 'on'])).code, 0);
    try {
      assert.equal((await call(daemon, '/v1/openapi.json', { key: null })).status, 200);
    } finally {
      await convdAdmin(daemon.dataDir, ['maintenance', 'off']);
    }
  });

  it('the validator is not a rubber stamp: a broken reference is refused', async () => {
    const broken = structuredClone(doc);
    delete broken.components.schemas.Result;
    assert.equal((await validate(broken as never)).valid, false);
  });

  it('lists exactly the operations of the route table, each answered by the daemon', async () => {
    const documented = Object.entries(doc.paths).flatMap(([path, item]) => Object.entries(item).map(([method, op]) => `${method.toUpperCase()} ${path} ${op.operationId}`));
    const table = ROUTES.map((r) => `${r.method} ${r.path.slice(3).replace(/:(\w+)/g, '{$1}')} ${r.operationId}`);
    assert.deepEqual(documented.sort(), table.sort());
    for (const route of ROUTES) {
      const op = doc.paths[route.path.slice(3).replace(/:(\w+)/g, '{$1}')]![route.method.toLowerCase()]!;
      assert.equal(op['x-required-scope'], route.scope ?? undefined);
      assert.deepEqual(op.security, route.scope ? [{ apiKey: [] }] : []);
      // The daemon has the route: with a made-up id it answers the spec's 404/409/422 shapes, never "no such route" or 405.
      const path = route.path.replace(':id', 'cnv_01m8000000000000000000000').replace(':source', 'png');
      const answer = await call(daemon, path, { method: route.method, ...(route.method === 'POST' ? { body: new URLSearchParams({ target: 'webp' }) } : {}) });
      assert.ok(answer.status !== 405 && !(answer.status === 404 && /route/.test(JSON.stringify(answer.body))), `${route.method} ${path}: ${answer.status} ${JSON.stringify(answer.body)}`);
    }
    const undocumented = await call(daemon, '/v1/openapi.json', { method: 'DELETE' });
    assert.equal(undocumented.status, 405);
  });

  it('live answers match the schemas: conversion in each state, result, list, formats, account, errors', async () => {
    const png = await smallPng();
    const accepted = await call(daemon, '/v1/conversions', { method: 'POST', body: pngUpload(png) });
    assert.equal(accepted.status, 202);
    conforms('createConversion', accepted);
    const succeeded = await call(daemon, `/v1/conversions/${accepted.body.id}?wait=20`);
    assert.equal(succeeded.body.status, 'succeeded');
    conforms('getConversion', succeeded);
    const waited = await call(daemon, '/v1/convert', { method: 'POST', body: pngUpload(png, 'b.png', { target: 'avif', wait: '20', quality: '50' }) });
    assert.equal(waited.status, 200);
    conforms('convert', waited);
    const failed = await call(daemon, '/v1/conversions', { method: 'POST', body: pngUpload(Buffer.from('no image'), 'x.png', { target: 'webp', source: 'png', wait: '20' }) });
    assert.equal(failed.body.status, 'failed');
    conforms('createConversion', failed);
    const expired = await call(daemon, `/v1/conversions/${accepted.body.id}`, { method: 'DELETE' });
    assert.equal(expired.body.status, 'expired');
    conforms('deleteConversion', expired);
    conforms('listConversions', await call(daemon, '/v1/conversions?limit=2'));
    conforms('listFormats', await call(daemon, '/v1/formats'));
    for (const source of ['png', 'mp3', 'csv', 'pdf']) conforms('getFormat', await call(daemon, `/v1/formats/${source}`));
    conforms('getAccount', await call(daemon, '/v1/account'));

    // Errors: each with a code the document lists for that operation and status.
    conforms('getConversion', await call(daemon, '/v1/conversions/cnv_01m8000000000000000000000'));
    conforms('getConversion', await call(daemon, `/v1/conversions/${accepted.body.id}?wait=99`));
    conforms('deleteConversion', await call(daemon, `/v1/conversions/${accepted.body.id}`, { method: 'DELETE' }));
    conforms('downloadResult', await call(daemon, `/v1/conversions/${accepted.body.id}/download`));
    conforms('createConversion', await call(daemon, '/v1/conversions', { method: 'POST', body: new URLSearchParams({ target: 'webp' }) }));
    conforms('getAccount', await call(daemon, '/v1/account', { key: 'cvk_not-a-real-key' }));
    conforms('getFormat', await call(daemon, '/v1/formats/nosuchformat'));
  });

  it('an error whose code the document does not list for the operation fails the check', () => {
    assert.throws(() => conforms('getAccount', { status: 404, headers: new Headers(), body: { error: { code: 'not_found', message: 'x' } } }), /does not list/);
    assert.throws(() => conforms('getConversion', { status: 404, headers: new Headers(), body: { error: { code: 'expired', message: 'x' } } }), /must be equal to one of the allowed values/);
    assert.throws(() => conforms('getAccount', { status: 200, headers: new Headers(), body: { plan: { id: 'free', name: 'Free' } } }), /must have required property/);
  });
});
