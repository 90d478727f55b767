// Which vitest project a test file runs in, read off its imports (and those of the test helpers
// it uses), so a new file lands in the right one without a list to keep:
// - board: drives the board in Chromium (test/support/board.ts): node's kind of file, with the
//   run's Chromium and shared board stack (test/support/board-global-setup.ts) on top.
// - node: spawns a process (a `herald` child, a browser, a tool) or serves HTTP (the server's
//   tests, real sockets). These depend on Node itself, so CI runs them on each Node line.
// - db: touches PostgreSQL (the per-file test database, its own pg client, an embedded cluster).
// - pure: neither; safe to share threads without isolation.
// The first that applies wins. vitest.config.ts builds the projects from this, and
// test/projects.test.ts checks the result against what the files actually do.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

export type ProjectName = 'pure' | 'db' | 'node' | 'board';

/** Where `npm test` looks for test files (the system suite has its own config). */
const TEST_DIRS = ['queue', 'worker', 'server', 'web', 'test'];
const SKIPPED_DIRS = new Set(['node_modules', 'web/dist', 'test/system']);

/** Imports (repository-relative path, or a package name) that put a file in a project. */
const MARKERS: Record<Exclude<ProjectName, 'pure'>, string[]> = {
  board: ['test/support/board.ts'],
  node: ['node:child_process', 'node:http', 'node:net', 'playwright-core', 'test/server-support.ts', 'test/support/herald-process.ts'],
  db: ['pg', 'test/support/db.ts', 'queue/embedded.ts'],
};

/** Test helpers are followed through their imports; product modules are not (a test of them is what it imports itself). */
const isHelper = (file: string) => (file.startsWith('test/') || file.startsWith('bench/')) && !file.endsWith('.test.ts');

/** The value imports of a source file (type-only ones are erased): packages by name, relative ones as repository paths. */
export function importsOf(file: string, source: string): string[] {
  const values: string[] = [];
  const statement = /(?:^|\n)\s*(?:import|export)\s+(type\s+)?([^'";]*?)\s*from\s*['"]([^'"]+)['"]|(?:^|\n)\s*import\s*['"]([^'"]+)['"]/g;
  for (const m of source.matchAll(statement)) {
    const [, typeOnly, clause, from, bare] = m;
    const spec = from ?? bare;
    if (typeOnly) continue;
    // `import { type A, type B } from` loads nothing either.
    const names = clause?.match(/^\{([^}]*)\}$/)?.[1].split(',').map((s) => s.trim()).filter(Boolean);
    if (names?.length && names.every((n) => n.startsWith('type '))) continue;
    values.push(spec.startsWith('.') ? resolveRelative(file, spec) : spec);
  }
  return values;
}

/** A repository file's value imports; none for a path that is not a file here. */
const readImports = (file: string): string[] => {
  const full = path.join(ROOT, file);
  return fs.existsSync(full) ? importsOf(file, fs.readFileSync(full, 'utf8')) : [];
};

function resolveRelative(file: string, spec: string): string {
  const resolved = path.posix.normalize(path.posix.join(path.posix.dirname(file), spec));
  // The board's modules import without an extension.
  return path.extname(resolved) ? resolved : `${resolved}.ts`;
}

/** Everything a test file loads at run time through itself and the helpers it uses. */
function reachableImports(file: string, read = readImports): Set<string> {
  const seen = new Set<string>();
  const visit = (f: string) => {
    for (const spec of read(f)) {
      if (seen.has(spec)) continue;
      seen.add(spec);
      if (isHelper(spec)) visit(spec);
    }
  };
  visit(file);
  return seen;
}

export function projectOf(file: string, read = readImports): ProjectName {
  const reached = reachableImports(file, read);
  if (MARKERS.board.some((m) => reached.has(m))) return 'board';
  if (MARKERS.node.some((m) => reached.has(m))) return 'node';
  if (MARKERS.db.some((m) => reached.has(m))) return 'db';
  return 'pure';
}

/**
 * A file that boots an embedded PostgreSQL of its own and never uses the run's cluster: with
 * DATABASE_URL set it would only repeat what the embedded run covers.
 */
export function ownClusterOnly(file: string): boolean {
  const reached = reachableImports(file);
  return reached.has('queue/embedded.ts') && !reached.has('test/support/db.ts') && !/\binject\(['"]pg/.test(fs.readFileSync(path.join(ROOT, file), 'utf8'));
}

/** Every test file `npm test` runs, repository-relative. */
export function testFiles(): string[] {
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const entry of fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
      const rel = `${dir}/${entry.name}`;
      if (entry.isDirectory()) {
        if (!SKIPPED_DIRS.has(entry.name) && !SKIPPED_DIRS.has(rel)) walk(rel);
      } else if (entry.name.endsWith('.test.ts')) files.push(rel);
    }
  };
  for (const dir of TEST_DIRS) walk(dir);
  return files.sort();
}

/** The test files of each project. */
export function projectFiles(): Record<ProjectName, string[]> {
  const out: Record<ProjectName, string[]> = { pure: [], db: [], node: [], board: [] };
  for (const file of testFiles()) out[projectOf(file)].push(file);
  return out;
}
