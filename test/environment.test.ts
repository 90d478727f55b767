// The environment Herald reads has one table (ENVIRONMENT in queue/config.ts), which `herald --help`
// prints. This reads the product's source for every variable it reads, so a new one that is not in
// the table (and so not in --help) fails here, and so does a row for one nothing reads any more.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { ENVIRONMENT } from '../queue/config.ts';
import { environmentHelp } from '../bin/help.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const PRODUCT = ['bin', 'queue', 'server', 'worker', 'client'];

function sources(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return sources(p);
    return /\.(ts|js)$/.test(e.name) && !/\.test\.ts$/.test(e.name) ? [p] : [];
  });
}

// process.env.X, env.X (an env passed in), and the names handed to config.ts's readers: int('X', ...).
const READS = /\b(?:process\.env|env)\.([A-Z][A-Z0-9_]+)|\b(?:int|bool|oneOf|list)\('([A-Z][A-Z0-9_]+)'/g;

it('every variable the product reads is in the table --help prints, and every row is read', () => {
  const read = new Set<string>();
  for (const file of PRODUCT.flatMap((d) => sources(path.join(ROOT, d)))) {
    for (const m of fs.readFileSync(file, 'utf8').matchAll(READS)) read.add(m[1] ?? m[2]);
  }
  // Not settings: what npm, the OS or Node set for us.
  for (const ambient of ['NODE_ENV', 'TERM', 'CI', 'HOME', 'PATH', 'npm_config_yes']) read.delete(ambient);
  const table = ENVIRONMENT.map(([name]) => name);
  expect([...read].filter((n) => !table.includes(n)), 'read but missing from ENVIRONMENT').toEqual([]);
  expect(table.filter((n) => !read.has(n)), 'in ENVIRONMENT but read nowhere').toEqual([]);
  const help = environmentHelp();
  for (const name of table) expect(help).toContain(name);
});
