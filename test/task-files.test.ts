// `herald worker --tasks DIR` with DIR outside the repository, as in /srv/tasks: task files of
// every extension, in ES module or CommonJS syntax, under a package.json of either type or none.
// Each kind is run as a job; a file Node cannot load stops the worker with one line naming it.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { workerTestContext } from './fixtures/worker-process.ts';
import { spawnHerald, type HeraldProcess } from './support/herald-process.ts';
import { waitFor } from './support/wait.ts';

const t = workerTestContext();
const root = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-tasks-'));
const refused: HeraldProcess[] = [];
afterAll(async () => {
  await Promise.all(refused.map((p) => p.dispose()));
  fs.rmSync(root, { recursive: true, force: true });
});

// The same handler in both syntaxes; TypeScript files carry annotations, so they need compiling.
const esm = (ts: boolean) => `export default async (payload${ts ? ': { n: number }' : ''}) => ({ doubled: payload.n * 2 });\n`;
const cjs = (ts: boolean) => `module.exports = async (payload${ts ? ': { n: number }' : ''}) => ({ doubled: payload.n * 2 });\n`;

// (Each with its own text: tsx caches a compile by content, the error's file name included.)
const broken = (file: string) => `export default async (payload: { n: number }) => {\n  return payload +; // ${file}\n};\n`;

// Which syntaxes each extension can hold: .mjs/.mts are always ES modules, .cjs always CommonJS;
// .js/.ts follow package.json, and tsx compiles either syntax in .ts/.cts.
const FILES: Record<string, (type: string | undefined) => string[]> = {
  ts: () => ['esm', 'cjs'],
  mts: () => ['esm'],
  cts: () => ['esm', 'cjs'],
  js: (type) => (type === 'module' ? ['esm'] : ['esm', 'cjs']),
  mjs: () => ['esm'],
  cjs: () => ['cjs'],
};

function writeTaskDir(name: string, type: string | undefined): string[] {
  const dir = path.join(root, name);
  fs.mkdirSync(dir);
  if (type) fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'my-tasks', type }));
  const kinds: string[] = [];
  for (const [ext, syntaxes] of Object.entries(FILES)) {
    for (const syntax of syntaxes(type)) {
      const kind = `${name}-${syntax}-${ext}`;
      const ts = ext.endsWith('ts');
      fs.writeFileSync(path.join(dir, `${kind}.${ext}`), syntax === 'esm' ? esm(ts) : cjs(ts));
      kinds.push(kind);
    }
  }
  return kinds;
}

describe('task files outside the repository', () => {
  it('load in every extension and syntax, with or without a package.json of either type', async () => {
    const dirs = [
      { name: 'bare', type: undefined },
      { name: 'commonjs', type: 'commonjs' },
      { name: 'module', type: 'module' },
    ];
    const kinds = dirs.flatMap((d) => writeTaskDir(d.name, d.type));
    // One worker per directory, all on the same database.
    for (const d of dirs) await t.spawn({ args: ['--tasks', path.join(root, d.name), '--queues', d.name] });
    const jobs = await t.db.queue.enqueueMany(kinds.map((kind, n) => ({ kind, payload: { n }, queue: kind.split('-')[0] })));
    const done = await waitFor(async () => {
      const all = await Promise.all(jobs.map((j) => t.db.queue.get(j.job.id)));
      return all.every((j) => j && ['succeeded', 'failed'].includes(j.status)) && all;
    }, { what: 'every task job to finish', timeoutMs: 60_000 });
    expect(done.map((j) => [j!.kind, j!.status, j!.result])).toEqual(kinds.map((kind, n) => [kind, 'succeeded', { doubled: n * 2 }]));
  });

  it.each([
    ['bad.cjs', esm(false), /bad\.cjs cannot load .*rename it to \.mjs/],
    ['bad.mjs', cjs(false), /bad\.mjs cannot load .*rename it to \.cjs/],
    // A syntax error: esbuild's own message, at FILE:LINE:COLUMN, not just its "Transform failed" header.
    ['bad.ts', broken('bad.ts'), /bad\.ts cannot load \(.*bad\.ts:2:18: ERROR: Unexpected ";"\)/],
    ['bad.mts', broken('bad.mts'), /bad\.mts cannot load \(.*bad\.mts:2:18: ERROR: Unexpected ";"\)/],
  ])('a %s that cannot load stops the worker with one line naming the file and the fix', async (file, text, message) => {
    const dir = fs.mkdtempSync(path.join(root, 'bad-'));
    fs.writeFileSync(path.join(dir, file), text);
    const proc = spawnHerald(['worker', '--tasks', dir], { DATABASE_URL: t.db.url });
    refused.push(proc);
    const { code } = await proc.exited;
    expect(code).toBe(1);
    const errors = proc.lines.filter((l) => typeof l.msg === 'string' && l.msg.startsWith('herald: '));
    expect(errors).toHaveLength(1);
    expect(errors[0].msg).toContain(path.join(dir, file));
    expect(errors[0].msg).toMatch(message);
  });
});
