import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/build.js';
import {
  addEdge,
  buildSrcGraph,
  cyclesOf,
  describeCycles,
  edgesOutside,
  ROOT_FOLDER,
  specifiersOf,
  type FolderGraph,
} from './import-graph.js';

// The folders of src/ form a graph without cycles (docs/development.md, "Layout"): a folder that imports one that
// imports it back cannot be read, tested or moved alone. src/*.ts is the composition root: it imports anything and
// nothing imports it. db/ and shared/ sit at the bottom: db/ imports only shared/, shared/ nothing of the project;
// http/ (the platform) imports only shared/ and settings/.

/** A graph from `[from file, to file]` pairs, as buildSrcGraph makes it from import lines. */
function graphOf(pairs: [string, string][]): FolderGraph {
  const graph: FolderGraph = new Map();
  for (const [from, to] of pairs) addEdge(graph, from, to);
  return graph;
}

/** The edges that break a folder's allowance, one line each, for a failure message that names the files. */
function breaches(graph: FolderGraph, from: string, allowed: readonly string[]): string[] {
  return edgesOutside(graph, from, allowed).map((e) => `${e.from} -> ${e.to}: ${e.files.join('; ')}`);
}

describe('import graph of src/ folders', () => {
  const graph = buildSrcGraph(ROOT);

  it('has no cycle between folders', () => {
    expect(describeCycles(graph)).toEqual([]);
  });

  it('lets nothing outside the composition root import src/*.ts', () => {
    const intoRoot = [...graph].filter(([from]) => from !== ROOT_FOLDER).flatMap(([, targets]) => targets.get(ROOT_FOLDER) ?? []);
    expect(intoRoot).toEqual([]);
  });

  it('keeps db/ on shared/ only, and shared/ on nothing of the project', () => {
    expect(breaches(graph, 'db', ['shared'])).toEqual([]);
    expect(breaches(graph, 'shared', [])).toEqual([]);
  });

  it('keeps http/, the platform both API families use, off db/', () => {
    // http/ tells a database outage by the error alone, read through shared/, never by an import of db/.
    expect(breaches(graph, 'http', ['shared', 'settings'])).toEqual([]);
  });

  it('sees the folders it should (the walk reads the real tree)', () => {
    // A walk that found no files would pass every test above.
    for (const folder of ['root', 'ordering', 'catalog', 'sync', 'reseller-auth', 'payments', 'db'])
      expect(graph.has(folder), folder).toBe(true);
    expect(graph.get('ordering')?.has('reseller-auth')).toBe(true);
    expect(graph.get('sync')?.has('ordering')).toBe(true);
  });
});

describe('cycle finder', () => {
  it('names each cycle with the files that make each of its edges', () => {
    const graph = graphOf([
      ['src/catalog/routes.ts', 'src/ordering/auth.ts'],
      ['src/ordering/routes.ts', 'src/catalog/routes.ts'],
      ['src/ordering/routes.ts', 'src/shared/ids.ts'],
      ['src/db/schema/payments.ts', 'src/payments/statuses.ts'],
      ['src/payments/service.ts', 'src/db/client.ts'],
      ['src/payments/view.ts', 'src/db/schema/index.ts'],
    ]);
    expect(describeCycles(graph)).toEqual([
      [
        'cycle between catalog, ordering:',
        '  catalog -> ordering: src/catalog/routes.ts -> src/ordering/auth.ts',
        '  ordering -> catalog: src/ordering/routes.ts -> src/catalog/routes.ts',
      ].join('\n'),
      [
        'cycle between db, payments:',
        '  db -> payments: src/db/schema/payments.ts -> src/payments/statuses.ts',
        '  payments -> db: src/payments/service.ts -> src/db/client.ts; src/payments/view.ts -> src/db/schema/index.ts',
      ].join('\n'),
    ]);
  });

  it('finds a longer cycle as one component, and none in a chain', () => {
    const ring = graphOf([
      ['src/a/x.ts', 'src/b/x.ts'],
      ['src/b/x.ts', 'src/c/x.ts'],
      ['src/c/x.ts', 'src/a/y.ts'],
      ['src/c/x.ts', 'src/d/x.ts'],
    ]);
    expect(cyclesOf(ring)).toEqual([['a', 'b', 'c']]);
    const chain = graphOf([
      ['src/a/x.ts', 'src/b/x.ts'],
      ['src/b/x.ts', 'src/c/x.ts'],
      ['src/a/x.ts', 'src/c/x.ts'],
    ]);
    expect(cyclesOf(chain)).toEqual([]);
  });

  it('counts a file of src/ itself as the root, a nested folder as its top folder, and one folder as no edge', () => {
    const graph = graphOf([
      ['src/http/server-options.ts', 'src/config.ts'],
      ['src/app.ts', 'src/http/server-options.ts'],
      ['src/db/schema/payments.ts', 'src/db/client.ts'],
    ]);
    expect(describeCycles(graph)).toEqual([
      [
        'cycle between http, root:',
        '  http -> root: src/http/server-options.ts -> src/config.ts',
        '  root -> http: src/app.ts -> src/http/server-options.ts',
      ].join('\n'),
    ]);
    expect(graph.has('db')).toBe(false);
  });

  it('reads static, type-only, re-exported and dynamic imports, and leaves packages out', () => {
    const source = [
      "import { a } from './a.js';",
      "import type { B } from '../b/b.js';",
      "export { c } from '../c/c.js';",
      "export type { D } from '../d/d.js';",
      "const e = await import('../e/e.js');",
      "type F = import('../f/f.js').F;",
      "import { sql } from 'drizzle-orm';",
      "import fs from 'node:fs';",
    ].join('\n');
    expect(specifiersOf(source).sort()).toEqual(['../b/b.js', '../c/c.js', '../d/d.js', '../e/e.js', '../f/f.js', './a.js']);
  });

  it('reports a planted cycle in the real tree', () => {
    const graph = buildSrcGraph(ROOT);
    addEdge(graph, 'src/db/schema/payments.ts', 'src/payments/service.ts');
    const cycles = describeCycles(graph);
    expect(cycles).toHaveLength(1);
    expect(cycles[0]).toContain('db -> payments: src/db/schema/payments.ts -> src/payments/service.ts');
    expect(breaches(graph, 'db', ['shared'])).toEqual(['db -> payments: src/db/schema/payments.ts -> src/payments/service.ts']);
  });
});
