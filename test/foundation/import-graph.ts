import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

/** The folder a file of src/ belongs to: its first folder, or `root` for src/*.ts (the composition root). */
export const ROOT_FOLDER = 'root';

/** One folder-to-folder edge and the import lines that make it (`src/a/x.ts -> src/b/y.ts`). */
export interface Edge {
  from: string;
  to: string;
  files: string[];
}

/** Folder → folder → the file pairs that make the edge. */
export type FolderGraph = Map<string, Map<string, string[]>>;

function tsFilesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...tsFilesUnder(full));
    else if (/\.ts$/.test(entry.name) && !/\.test\.ts$/.test(entry.name)) out.push(full);
  }
  return out;
}

/** `src/ordering/auth.ts` → `ordering`; `src/app.ts` → `root`. */
export function folderOf(srcRelative: string): string {
  const parts = srcRelative.split('/');
  return parts.length === 2 ? ROOT_FOLDER : parts[1]!;
}

/**
 * Every relative specifier of a file: static imports and re-exports (type-only ones included, as they tie the
 * folders together just the same), `import()` and `import type` expressions.
 */
export function specifiersOf(source: string): string[] {
  const info = ts.preProcessFile(source, true, true);
  return info.importedFiles.map((f) => f.fileName).filter((s) => s.startsWith('.'));
}

/** Adds one file-to-file import to the graph, unless both ends lie in one folder. */
export function addEdge(graph: FolderGraph, fromFile: string, toFile: string): void {
  const from = folderOf(fromFile);
  const to = folderOf(toFile);
  if (from === to) return;
  let targets = graph.get(from);
  if (!targets) graph.set(from, (targets = new Map()));
  const files = targets.get(to) ?? [];
  files.push(`${fromFile} -> ${toFile}`);
  targets.set(to, files);
}

/** The folder graph of `<repo>/src`, from every relative import of every non-test .ts file. */
export function buildSrcGraph(repoRoot: string): FolderGraph {
  const graph: FolderGraph = new Map();
  const src = path.join(repoRoot, 'src');
  for (const file of tsFilesUnder(src)) {
    const rel = path.relative(repoRoot, file).split(path.sep).join('/');
    if (!graph.has(folderOf(rel))) graph.set(folderOf(rel), new Map());
    for (const spec of specifiersOf(fs.readFileSync(file, 'utf8'))) {
      const target = path.resolve(path.dirname(file), spec.replace(/\.js$/, '.ts'));
      const targetRel = path.relative(repoRoot, target).split(path.sep).join('/');
      // An import that leaves src/ (package.json, say) ties no folders together.
      if (!targetRel.startsWith('src/')) continue;
      addEdge(graph, rel, targetRel);
    }
  }
  return graph;
}

/** Tarjan's strongly connected components; only those with more than one folder (a folder never imports itself here). */
export function cyclesOf(graph: FolderGraph): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const components: string[][] = [];
  let next = 0;
  const nodes = new Set<string>(graph.keys());
  for (const targets of graph.values()) for (const t of targets.keys()) nodes.add(t);

  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next);
    next += 1;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v)?.keys() ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, index.get(w)!));
      }
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1) components.push(component.sort());
    }
  };
  for (const v of [...nodes].sort()) if (!index.has(v)) visit(v);
  return components;
}

/** The edges inside one component, each with the imports that make it. */
export function edgesWithin(graph: FolderGraph, component: string[]): Edge[] {
  const members = new Set(component);
  const edges: Edge[] = [];
  for (const from of component)
    for (const [to, files] of graph.get(from) ?? []) if (members.has(to)) edges.push({ from, to, files: [...files].sort() });
  return edges;
}

/** A cycle report a reader can act on: the folders, then each edge and the imports that make it. */
export function describeCycles(graph: FolderGraph): string[] {
  return cyclesOf(graph).map((component) =>
    [
      `cycle between ${component.join(', ')}:`,
      ...edgesWithin(graph, component).map((e) => `  ${e.from} -> ${e.to}: ${e.files.join('; ')}`),
    ].join('\n'),
  );
}

/** The edges from `from` to any folder outside `allowed`, with their imports. */
export function edgesOutside(graph: FolderGraph, from: string, allowed: readonly string[]): Edge[] {
  return [...(graph.get(from) ?? [])]
    .filter(([to]) => !allowed.includes(to))
    .map(([to, files]) => ({ from, to, files: [...files].sort() }));
}
