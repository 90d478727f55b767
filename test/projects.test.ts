// The vitest projects place each test file by its imports (test/support/projects.ts). A file in
// the wrong one either fails for a reason that has nothing to do with its code (a database test
// in `pure` finds no PostgreSQL) or, worse, is skipped where CI runs it for its risk (a process
// test in `db` never runs on Node 20). These tests hold the config to the classifier, and the
// classifier to what each file's own source does.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import config from '../vitest.config.ts';
import { ROOT, importsOf, ownClusterOnly, projectOf, testFiles, type ProjectName } from './support/projects.ts';

const projects = (config.test?.projects ?? []) as { test: { name: ProjectName; include: string[] } }[];
const source = (file: string) => fs.readFileSync(path.join(ROOT, file), 'utf8');

// What a file's own code does, whatever it imports (a call, not a word in a comment).
const STARTS_SOMETHING = /(?<![\w.])(spawn|spawnSync|execFile|execFileSync|exec|execSync|fork|spawnHerald|spawnCommand|testServer|createServer)\(|\bchromium\b|\.listen\(/;
const READS_DATABASE = /\binject\(['"]pg|\benv\.DATABASE_URL\b|\bnew pg\.|\b(createTestDatabase|useTestDatabase|workerTestContext|startEmbedded)\(/;

describe('vitest.config.ts', () => {
  it('has the four projects', () => {
    expect(projects.map((p) => p.test.name)).toEqual(['pure', 'db', 'node', 'board']);
  });

  it('puts every test file in exactly the project its imports call for', () => {
    const misplaced: string[] = [];
    for (const file of testFiles()) {
      const placed = projects.filter((p) => p.test.include.includes(file)).map((p) => p.test.name);
      // With DATABASE_URL, a file that only boots its own embedded cluster runs nowhere (the embedded run has it).
      const expected = projectOf(file) === 'db' && process.env.DATABASE_URL && ownClusterOnly(file) ? [] : [projectOf(file)];
      if (placed.join() !== expected.join()) misplaced.push(`${file}: in [${placed.join()}], belongs in [${expected.join()}]`);
    }
    expect(misplaced).toEqual([]);
    const known = new Set(testFiles());
    expect(projects.flatMap((p) => p.test.include).filter((f) => !known.has(f))).toEqual([]);
  });
});

describe('the files of each project, by their own source', () => {
  // This file's own source is made of those patterns.
  const files = (name: ProjectName) => projects.find((p) => p.test.name === name)!.test.include.filter((f) => f !== 'test/projects.test.ts');

  it('pure files start nothing and read no database', () => {
    const offenders = files('pure').filter((f) => STARTS_SOMETHING.test(source(f)) || READS_DATABASE.test(source(f)));
    expect(offenders).toEqual([]);
  });

  it('db files start no process and serve no HTTP', () => {
    expect(files('db').filter((f) => STARTS_SOMETHING.test(source(f)))).toEqual([]);
  });
});

describe('projectOf', () => {
  // A made-up tree of imports: the classifier follows test helpers, not product modules.
  const tree: Record<string, string> = {
    'test/a.test.ts': `import { x } from './support/uses-db.ts';`,
    'test/support/uses-db.ts': `import { useTestDatabase } from './db.ts';`,
    'test/b.test.ts': `import type pg from 'pg';\nimport { type TestDatabase } from './support/db.ts';`,
    'test/c.test.ts': `import { useTestDatabase } from './support/db.ts';\nimport { spawnHerald } from './support/herald-process.ts';`,
    'queue/d.test.ts': `import { Queue } from './queue.ts';`,
    'queue/queue.ts': `import pg from 'pg';`,
  };
  const read = (file: string) => (tree[file] === undefined ? [] : importsOf(file, tree[file]));

  it('follows helpers to the database support', () => {
    expect(projectOf('test/a.test.ts', read)).toBe('db');
  });

  it('ignores type-only imports', () => {
    expect(projectOf('test/b.test.ts', read)).toBe('pure');
  });

  it('puts a file that spawns in node, even when it also uses the database', () => {
    expect(projectOf('test/c.test.ts', read)).toBe('node');
  });

  it('puts a file that drives the board in board, before node', () => {
    const withBoard = (file: string) => (file === 'test/e.test.ts' ? importsOf(file, `import { startBoardStack } from './support/board.ts';\nimport { spawnHerald } from './support/herald-process.ts';`) : read(file));
    expect(projectOf('test/e.test.ts', withBoard)).toBe('board');
  });

  it('does not follow product modules', () => {
    expect(projectOf('queue/d.test.ts', read)).toBe('pure');
  });
});
