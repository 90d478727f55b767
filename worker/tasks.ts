// Task handlers: the built-in demo tasks plus files KIND.ts / KIND.js (.mts, .cts, .mjs, .cjs)
// from --tasks DIR, each exporting `async (payload, ctx) => result` as its default export (ESM)
// or as module.exports (CommonJS). All are loaded at start, so the worker
// knows its kinds up front and claims only those (see worker.ts on unknown kinds).
import fs from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Logger } from '../queue/log.ts';
import { builtinTasks } from './builtin-tasks.ts';
import type { Task } from './task.ts';

export type { Task, TaskContext } from './task.ts';

const KIND = /^[A-Za-z0-9_.:-]{1,128}$/;
const TASK_FILE = /^(.+)\.([mc]?[jt]s)$/;
// Type declarations and tests that sit beside tasks are not tasks.
const NOT_A_TASK = /\.(d|test|spec)\.[mc]?[jt]s$/;

/** Loads every task file in `dir`. Throws a clear error for a bad file: a worker must not half-start. */
export async function loadTaskDir(dir: string): Promise<Map<string, Task>> {
  const abs = path.resolve(dir);
  let names: string[];
  try {
    names = (await fs.readdir(abs)).sort();
  } catch (err) {
    throw new Error(`cannot read tasks directory ${abs}: ${(err as Error).message}`, { cause: err });
  }
  const tasks = new Map<string, Task>();
  for (const name of names) {
    const match = TASK_FILE.exec(name);
    if (!match || NOT_A_TASK.test(name)) continue;
    const kind = match[1];
    const file = path.join(abs, name);
    if (!KIND.test(kind)) throw new Error(`task file ${file}: "${kind}" is not a valid kind (1-128 of [A-Za-z0-9_.:-])`);
    if (tasks.has(kind)) throw new Error(`tasks directory ${abs} has two files for kind "${kind}"`);
    const task = taskOf(await importTask(file));
    if (!task) throw new Error(`task file ${file} must default-export a function (payload, ctx) => result`);
    tasks.set(kind, task);
  }
  return tasks;
}

async function importTask(file: string): Promise<{ default?: unknown }> {
  try {
    return (await import(pathToFileURL(file).href)) as { default?: unknown };
  } catch (err) {
    const reason = loadFailure(file, err);
    throw new Error(`task file ${file} cannot load (${reason}): ${FIX[path.extname(file)] ?? 'check its syntax'}`, { cause: err });
  }
}

/**
 * Why a file did not load, on one line. tsx compiles with esbuild, whose message is a header
 * ("Transform failed with 1 error:") and then the errors as FILE:LINE:COLUMN: ERROR: TEXT:
 * those are the part a person needs.
 */
function loadFailure(file: string, err: unknown): string {
  const lines = String((err as Error | undefined)?.message ?? err).split('\n').map((l) => l.trim()).filter(Boolean);
  if (!/^Transform failed with \d+ errors?:?$/.test(lines[0] ?? '') || lines.length < 2) return lines[0] ?? String(err);
  // tsx names a .mts/.cts file .ts to esbuild: give the error the file's real name back.
  const stem = (f: string) => f.replace(/\.[mc]?[jt]s$/, '');
  return lines
    .slice(1)
    .map((l) => l.replace(/^(.+?)(:\d+:\d+: )/, (all, at: string, where: string) => (stem(at) === stem(file) ? `${file}${where}` : all)))
    .join('; ');
}

// Node fixes the module system of these two by extension, whatever package.json says.
const FIX: Record<string, string> = {
  '.mjs': 'a .mjs file is an ES module; use `export default`, or rename it to .cjs to keep `module.exports`',
  '.cjs': 'a .cjs file is CommonJS; use `module.exports =`, or rename it to .mjs to keep `export default`',
};

/**
 * The handler: the default export, or module.exports of a CommonJS file. A file written with
 * `export default` that Node loads as CommonJS (.ts/.js outside a "type": "module" package, or
 * .cts) arrives compiled to CommonJS, its function one level down as `default.default`.
 */
function taskOf(mod: { default?: unknown }): Task | undefined {
  const value = mod.default;
  if (typeof value === 'function') return value as Task;
  const inner = (value as { default?: unknown } | null)?.default;
  return typeof inner === 'function' ? (inner as Task) : undefined;
}

/** Built-ins, then in-process tasks, then the directory; later ones override by kind. */
export async function loadTasks(opts: { dir?: string; tasks?: Record<string, Task>; logger?: Logger }): Promise<Map<string, Task>> {
  const all = new Map<string, Task>(Object.entries(builtinTasks));
  const layers: [string, Map<string, Task>][] = [['in-process', new Map(Object.entries(opts.tasks ?? {}))]];
  if (opts.dir) layers.push([opts.dir, await loadTaskDir(opts.dir)]);
  for (const [source, layer] of layers) {
    for (const [kind, task] of layer) {
      if (all.has(kind)) opts.logger?.info({ kind, source }, 'task overrides an earlier one of the same kind');
      all.set(kind, task);
    }
  }
  return all;
}
