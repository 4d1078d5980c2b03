import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, posix, relative, sep } from 'node:path';
import ts from 'typescript';

/** One relative import of a module: static, type-only, re-export or dynamic `import()` alike. */
export interface ImportEdge {
  /** Paths relative to the root, with forward slashes (`src/model/ids.ts`). */
  from: string;
  to: string;
  /** 1-based, for the message that points at it. */
  line: number;
}

/** Every module of the given folders and the modules of the same tree each one imports. */
export interface ImportGraph {
  modules: string[];
  edges: ImportEdge[];
}

const SOURCE = /\.tsx?$/;

function* sourceFiles(dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* sourceFiles(path);
    else if (entry.isFile() && SOURCE.test(entry.name) && !entry.name.endsWith('.d.ts')) yield path;
  }
}

const asKey = (root: string, path: string) => relative(root, path).split(sep).join('/');

/**
 * Reads imports the way the compiler's pre-processor does (no type checking, no resolution of
 * packages): every specifier that starts with `.` is resolved against the importing file. The
 * tree imports with explicit `.ts`/`.tsx` extensions, so a specifier that names no file is a
 * mistake to report, never something to skip in silence.
 */
export function readImportGraph(root: string, folders: readonly string[]): ImportGraph {
  const modules = folders.flatMap((folder) => [...sourceFiles(join(root, folder))]).map((path) => asKey(root, path)).sort();
  const edges: ImportEdge[] = [];
  for (const from of modules) {
    const text = readFileSync(join(root, from), 'utf8');
    const { importedFiles } = ts.preProcessFile(text, true, true);
    for (const imported of importedFiles) {
      const specifier = imported.fileName;
      if (!specifier.startsWith('.')) continue;
      const to = posix.normalize(posix.join(posix.dirname(from), specifier));
      const target = join(root, to);
      if (!existsSync(target) || !statSync(target).isFile()) {
        throw new Error(`${from} imports ${specifier}, which is no file (resolved to ${to})`);
      }
      const line = text.slice(0, imported.pos).split('\n').length;
      edges.push({ from, to, line });
    }
  }
  return { modules, edges };
}

/**
 * The import circles: each group of modules that reach one another (Tarjan's strongly connected
 * components of more than one module, or a module that imports itself), written as one path
 * through the group back to its start so that a reader sees which imports to cut.
 */
export function findCircles(graph: ImportGraph): string[][] {
  const next = new Map<string, string[]>(graph.modules.map((module) => [module, []]));
  for (const edge of graph.edges) next.get(edge.from)?.push(edge.to);

  const order = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const groups: string[][] = [];
  const visit = (module: string) => {
    order.set(module, order.size);
    low.set(module, order.get(module)!);
    stack.push(module);
    onStack.add(module);
    for (const to of next.get(module) ?? []) {
      if (!order.has(to)) {
        visit(to);
        low.set(module, Math.min(low.get(module)!, low.get(to)!));
      } else if (onStack.has(to)) {
        low.set(module, Math.min(low.get(module)!, order.get(to)!));
      }
    }
    if (low.get(module) !== order.get(module)) return;
    const group: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      group.push(member);
    } while (member !== module);
    if (group.length > 1 || next.get(module)!.includes(module)) groups.push(group);
  };
  for (const module of graph.modules) if (!order.has(module)) visit(module);

  return groups.map((group) => circleThrough(group.sort()[0]!, new Set(group), next));
}

/** The shortest way from `start` back to itself inside its group (breadth first). */
function circleThrough(start: string, group: ReadonlySet<string>, next: ReadonlyMap<string, string[]>): string[] {
  const cameFrom = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const at = queue.shift()!;
    for (const to of next.get(at) ?? []) {
      if (!group.has(to)) continue;
      if (to === start) {
        const path = [start];
        for (let step: string | undefined = at; step !== undefined && step !== start; step = cameFrom.get(step)) path.splice(1, 0, step);
        return [...path, start];
      }
      if (!cameFrom.has(to)) {
        cameFrom.set(to, at);
        queue.push(to);
      }
    }
  }
  return [start, start];
}

