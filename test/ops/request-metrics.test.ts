import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DaemonMetrics } from '../../daemon/ops/metrics.ts';
import { RequestMetrics } from '../../daemon/ops/request-metrics.ts';
import { parseMetrics, sample } from '../helpers/ops-support.ts';

const options = {
  countName: 'test_requests_total',
  countHelp: 'Requests.',
  latencyName: 'test_latency_seconds',
  latencyHelp: 'Latency.',
  buckets: [0.001, 0.01, 0.1],
  methods: ['GET', 'POST'],
};

describe('RequestMetrics', () => {
  it('counts by method, route and status, and renders cumulative buckets, +Inf, sum and count', () => {
    const metrics = new RequestMetrics(options);
    metrics.observe('GET', '/a', 200, 0.0005);
    metrics.observe('GET', '/a', 200, 0.001); // on a bound: counted in that bucket (le)
    metrics.observe('GET', '/a', 404, 0.05);
    metrics.observe('GET', '/a', 200, 2);
    metrics.observe('POST', '/a', 201, 0.002);
    const samples = parseMetrics(metrics.render());
    const get = { method: 'GET', route: '/a' };
    assert.equal(sample(samples, 'test_requests_total', { ...get, status: '200' }), 3);
    assert.equal(sample(samples, 'test_requests_total', { ...get, status: '404' }), 1);
    assert.equal(sample(samples, 'test_requests_total', { method: 'POST', route: '/a', status: '201' }), 1);
    assert.deepEqual(
      ['0.001', '0.01', '0.1', '+Inf'].map((le) => sample(samples, 'test_latency_seconds_bucket', { ...get, le })),
      [2, 2, 3, 4],
    );
    assert.equal(sample(samples, 'test_latency_seconds_count', get), 4);
    assert.ok(Math.abs(sample(samples, 'test_latency_seconds_sum', get) - 2.0515) < 1e-9);
    assert.equal(sample(samples, 'test_latency_seconds_bucket', { method: 'POST', route: '/a', le: '0.01' }), 1);
  });

  it('writes HELP and TYPE once per family, before its samples, and escapes label values and help', () => {
    const metrics = new RequestMetrics({ ...options, countHelp: 'Requests \\ answered\nby route.' });
    metrics.observe('GET', 'odd "route" \\ with\na newline', 500, 0.01);
    const lines = metrics.render().split('\n');
    assert.equal(lines.at(-1), '', 'ends with a newline');
    assert.deepEqual(lines.filter((line) => line.startsWith('# TYPE')), ['# TYPE test_requests_total counter', '# TYPE test_latency_seconds histogram']);
    assert.deepEqual(lines.filter((line) => line.startsWith('# HELP')), ['# HELP test_requests_total Requests \\\\ answered\\nby route.', '# HELP test_latency_seconds Latency.']);
    assert.ok(lines.indexOf('# TYPE test_requests_total counter') < lines.findIndex((line) => line.startsWith('test_requests_total{')));
    assert.ok(lines.indexOf('# TYPE test_latency_seconds histogram') < lines.findIndex((line) => line.startsWith('test_latency_seconds_bucket{')));
    assert.ok(lines.includes('test_requests_total{method="GET",route="odd \\"route\\" \\\\ with\\na newline",status="500"} 1'), lines.join('\n'));
  });

  it('counts every method outside its list as `other`', () => {
    const metrics = new RequestMetrics(options);
    for (const method of ['PROPFIND', 'MKCOL', 'PURGE', 'M-SEARCH', 'get', 'HEAD']) metrics.observe(method, '/a', 405, 0.0001);
    metrics.observe('POST', '/a', 200, 0.0001);
    const samples = parseMetrics(metrics.render());
    assert.equal(sample(samples, 'test_requests_total', { method: 'other', route: '/a', status: '405' }), 6);
    assert.equal(sample(samples, 'test_requests_total', { method: 'POST', route: '/a', status: '200' }), 1);
    const methods = new Set([...samples.keys()].map((key) => /method="([^"]*)"/.exec(key)?.[1]));
    assert.deepEqual([...methods].sort(), ['POST', 'other']);
  });

  it('counts a duration that is not a time as 0 s, in the first bucket', () => {
    const metrics = new RequestMetrics(options);
    metrics.observe('GET', '/a', 200, -1);
    metrics.observe('GET', '/a', 200, Number.NaN);
    const text = metrics.render();
    assert.ok(text.includes('test_latency_seconds_bucket{le="0.001",method="GET",route="/a"} 2\n'), text);
    assert.ok(text.includes('test_latency_seconds_sum{method="GET",route="/a"} 0\n'), text);
    assert.ok(text.includes('test_latency_seconds_count{method="GET",route="/a"} 2\n'), text);
    assert.ok(text.includes('test_requests_total{method="GET",route="/a",status="200"} 2\n'), text);
  });

  it("is rendered after prom-client's metrics, each family once", async () => {
    const metrics = new DaemonMetrics({ version: 't', workers: 1, engines: ['image'], queueDepth: () => 0, leasesHeld: () => null, runningEngines: async () => [], diskFreeBytes: () => 1 });
    metrics.request('GET', '/v1/account', 200, 0.002);
    const { body } = await metrics.render();
    const types = body.split('\n').filter((line) => line.startsWith('# TYPE '));
    assert.equal(new Set(types).size, types.length, 'no family twice');
    assert.ok(types.includes('# TYPE convd_http_requests_total counter'));
    assert.ok(types.indexOf('# TYPE convd_workers gauge') >= 0 && types.indexOf('# TYPE convd_workers gauge') < types.indexOf('# TYPE convd_http_requests_total counter'), types.join('\n'));
    const samples = parseMetrics(body);
    assert.equal(sample(samples, 'convd_http_requests_total', { method: 'GET', route: '/v1/account', status: '200' }), 1);
    assert.equal(sample(samples, 'convd_http_request_duration_seconds_bucket', { method: 'GET', route: '/v1/account', le: '0.0025' }), 1);
  });
});
