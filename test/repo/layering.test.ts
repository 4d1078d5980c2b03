import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { findCircles, readImportGraph, type ImportEdge, type ImportGraph } from '../helpers/import-graph.ts';

/**
 * The rooms of the house, bottom up, and what each may import besides itself: data flows one way,
 * from the faces (daemon/, cli/) into the core (src/), and inside the core from the service down
 * to the shapes every layer shares. A module belongs to the longest entry its path starts with;
 * what a room may import is a folder or one file.
 */
const MAY_IMPORT: Readonly<Record<string, readonly string[]>> = {
  // The shapes every layer shares (records, statuses, the public API objects, ids): nothing above.
  'src/model': [],
  'src/errors': ['src/model'],
  'src/inputs': ['src/model', 'src/errors'],
  // An engine knows nothing of formats' registry, stores, accounts or HTTP.
  'src/engines': ['src/model', 'src/errors', 'src/inputs'],
  // The registry is built from the engines' declarations, never the other way.
  'src/formats': ['src/model', 'src/errors', 'src/engines'],
  'src/store': ['src/model', 'src/errors'],
  'src/queue': ['src/model', 'src/errors', 'src/store', 'src/engines', 'src/formats'],
  'src/webhooks': ['src/model', 'src/errors', 'src/store', 'src/inputs'],
  'src/service': ['src/model', 'src/errors', 'src/inputs', 'src/engines', 'src/formats', 'src/store', 'src/queue', 'src/webhooks'],
  'src/sign-in': ['src/model', 'src/errors', 'src/store', 'src/service'],
  // The ConvClient contract: HttpClient over /v1, LocalClient over the service in-process. The
  // package's client (convd/client) hands on the receiver API (src/webhooks/index.ts) as is.
  'src/client': ['src/model', 'src/errors', 'src/inputs', 'src/engines', 'src/formats', 'src/service', 'src/webhooks/index.ts'],
  // The faces. The daemon turns requests into calls on the core.
  daemon: ['src'],
  // The CLI speaks the ConvClient contract and its shapes, and verifies webhooks as any receiver
  // does, through the package's published receiver API.
  cli: ['src/client', 'src/model', 'src/errors', 'src/formats', 'src/webhooks/index.ts'],
};

/**
 * Imports that break a rule today and are on their way out. The test fails when one no longer
 * occurs, so that its entry goes with it.
 */
const NOT_YET_MOVED: readonly { from: string; to: string; until: string }[] = [];

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const FOLDERS = ['src', 'daemon', 'cli'];

const within = (path: string, entry: string) => path === entry || path.startsWith(`${entry}/`);

function roomOf(path: string): string | undefined {
  return Object.keys(MAY_IMPORT).filter((room) => within(path, room)).sort((a, b) => b.length - a.length)[0];
}

/** Every import that leaves its room for one its room may not import, as `file:line -> target`. */
function brokenRules(graph: ImportGraph, exceptions = NOT_YET_MOVED): { edge: ImportEdge; excusedBy?: (typeof NOT_YET_MOVED)[number] }[] {
  const broken: { edge: ImportEdge; excusedBy?: (typeof NOT_YET_MOVED)[number] }[] = [];
  for (const edge of graph.edges) {
    const room = roomOf(edge.from);
    if (room === undefined || roomOf(edge.to) === room) continue;
    if (MAY_IMPORT[room]!.some((allowed) => within(edge.to, allowed))) continue;
    broken.push({ edge, excusedBy: exceptions.find((exception) => within(edge.from, exception.from) && within(edge.to, exception.to)) });
  }
  return broken;
}

const show = (edge: ImportEdge) => `${edge.from}:${edge.line} -> ${edge.to}`;

describe('layering of src/, daemon/ and cli/', () => {
  const graph = readImportGraph(ROOT, FOLDERS);

  it('reads the whole tree', () => {
    assert.ok(graph.modules.length > 200, `only ${graph.modules.length} modules found`);
    assert.ok(graph.edges.length > graph.modules.length);
  });

  it('places every module in a room of the rules', () => {
    const homeless = graph.modules.filter((module) => roomOf(module) === undefined);
    assert.deepEqual(homeless, [], `modules in no room: add their folder to MAY_IMPORT\n${homeless.join('\n')}`);
  });

  // A type-only import counts: it ties the two files together for a reader just as much, and is
  // where a value import lands next, when the circle then breaks at run time.
  it('has no import circle', () => {
    const circles = findCircles(graph);
    assert.deepEqual(circles.map((circle) => circle.join(' -> ')), [], 'import circles (cut one import of each)');
  });

  it('imports only downwards', () => {
    const broken = brokenRules(graph).filter((rule) => rule.excusedBy === undefined);
    assert.deepEqual(broken.map((rule) => show(rule.edge)), [], 'imports a layer may not make (MAY_IMPORT)');
  });

  it('keeps no exception that nothing needs any more', () => {
    const used = new Set(brokenRules(graph).map((rule) => rule.excusedBy));
    const stale = NOT_YET_MOVED.filter((exception) => !used.has(exception));
    assert.deepEqual(stale, [], 'remove these from NOT_YET_MOVED: no import needs them');
  });
});

describe('the layering checks themselves', () => {
  const graph = (edges: [string, string][]): ImportGraph => ({
    modules: [...new Set(edges.flat())].sort(),
    edges: edges.map(([from, to]) => ({ from, to, line: 1 })),
  });

  it('find a circle, type-only or not, and name its way round', () => {
    const circles = findCircles(graph([
      ['src/engines/catalog.ts', 'src/engines/host/engine-host.ts'],
      ['src/engines/host/engine-host.ts', 'src/engines/host/protocol.ts'],
      ['src/engines/host/protocol.ts', 'src/engines/catalog.ts'],
      ['src/engines/lazy.ts', 'src/engines/catalog.ts'],
    ]));
    assert.deepEqual(circles, [['src/engines/catalog.ts', 'src/engines/host/engine-host.ts', 'src/engines/host/protocol.ts', 'src/engines/catalog.ts']]);
    assert.deepEqual(findCircles(graph([['cli/a.ts', 'cli/a.ts']])), [['cli/a.ts', 'cli/a.ts']]);
    assert.deepEqual(findCircles(graph([['cli/a.ts', 'cli/b.ts'], ['cli/b.ts', 'src/model/ids.ts']])), []);
  });

  it('find an import upwards, and a face reaching past the contract', () => {
    const broken = brokenRules(graph([
      ['src/store/lowdb-store.ts', 'src/service/ids.ts'],
      ['src/service/accounts.ts', 'src/client/types.ts'],
      ['cli/render.ts', 'src/webhooks/deliverer.ts'],
      ['src/model/conversion.ts', 'daemon/app.ts'],
      ['cli/webhook-receiver.ts', 'src/webhooks/index.ts'],
      ['src/service/accounts.ts', 'src/store/types.ts'],
      ['daemon/app.ts', 'src/service/system.ts'],
    ]), []);
    assert.deepEqual(broken.map((rule) => `${rule.edge.from} -> ${rule.edge.to}`), [
      'src/store/lowdb-store.ts -> src/service/ids.ts',
      'src/service/accounts.ts -> src/client/types.ts',
      'cli/render.ts -> src/webhooks/deliverer.ts',
      'src/model/conversion.ts -> daemon/app.ts',
    ]);
  });
});
