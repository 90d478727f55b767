import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { pino } from 'pino';
import type { Job } from '../queue/job.ts';
import { builtinTasks } from './builtin-tasks.ts';
import { loadTaskDir, loadTasks, type TaskContext } from './tasks.ts';

const FIXTURES = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'test', 'fixtures');

function ctx(attempt = 1, signal = new AbortController().signal, parents: TaskContext['parents'] = []): TaskContext & { reports: [number, string?][] } {
  const reports: [number, string?][] = [];
  return {
    job: { id: '1', attempt } as Job,
    parents,
    signal,
    progress: async (p, m) => void reports.push([p, m]),
    log: pino({ level: 'silent' }),
    reports,
    step: () => Promise.reject(new Error('not durable here')),
    sleep: () => Promise.reject(new Error('not durable here')),
    sleepUntil: () => Promise.reject(new Error('not durable here')),
    waitFor: () => Promise.reject(new Error('not durable here')),
    invoke: () => Promise.reject(new Error('not durable here')),
  };
}

describe('task files', () => {
  it('loads KIND.ts and KIND.js, and skips declarations', async () => {
    const tasks = await loadTaskDir(path.join(FIXTURES, 'tasks'));
    expect([...tasks.keys()]).toEqual(['shout', 'upper']);
    expect(await tasks.get('upper')!({ text: 'a' }, ctx())).toEqual({ text: 'A' });
  });

  it('refuses a file without a default-exported function, naming it', async () => {
    await expect(loadTaskDir(path.join(FIXTURES, 'bad-tasks'))).rejects.toThrow(/broken\.ts must default-export a function/);
  });

  it('refuses a directory that does not exist', async () => {
    await expect(loadTaskDir(path.join(FIXTURES, 'nope'))).rejects.toThrow(/cannot read tasks directory/);
  });

  it('layers built-ins, in-process tasks and the directory', async () => {
    const mine = async () => 'mine';
    const tasks = await loadTasks({ dir: path.join(FIXTURES, 'tasks'), tasks: { echo: mine, extra: mine } });
    expect([...tasks.keys()].sort()).toEqual(['echo', 'extra', 'fail', 'flaky', 'gather', 'progress', 'shout', 'sleep', 'upper']);
    expect(tasks.get('echo')).toBe(mine);
  });
});

describe('built-in tasks', () => {
  it('sleep waits and reports, and stops when its signal fires', async () => {
    expect(await builtinTasks.sleep({ ms: 1 }, ctx())).toEqual({ slept: 1 });
    const ac = new AbortController();
    const running = builtinTasks.sleep({ ms: 60_000 }, ctx(1, ac.signal));
    ac.abort(new Error('stop'));
    await expect(running).rejects.toMatchObject({ name: 'AbortError' });
    await expect(builtinTasks.sleep({ ms: -1 }, ctx())).rejects.toThrow(/payload\.ms must be a number/);
  });

  it('echo, fail and flaky', async () => {
    expect(await builtinTasks.echo({ a: [1] }, ctx())).toEqual({ a: [1] });
    await expect(builtinTasks.fail({ message: 'boom' }, ctx())).rejects.toThrow('boom');
    await expect(builtinTasks.fail({}, ctx())).rejects.toThrow(/always fails/);
    const parents = [
      { id: '1', ref: 'a', kind: 'k', status: 'succeeded' as const, result: { n: 1 } },
      { id: '2', ref: null, kind: 'k', status: 'failed' as const, result: null },
    ];
    expect(await builtinTasks.gather({}, ctx(1, undefined, parents))).toEqual({ parents: [{ ref: 'a', result: { n: 1 } }, { ref: null, result: null }] });
    await expect(builtinTasks.flaky({ failTimes: 2 }, ctx(2))).rejects.toThrow(/attempt 2 of 2/);
    expect(await builtinTasks.flaky({ failTimes: 2 }, ctx(3))).toEqual({ attempt: 3 });
  });

  it('progress reports each step', async () => {
    const c = ctx();
    expect(await builtinTasks.progress({ steps: 4, stepMs: 0 }, c)).toEqual({ steps: 4 });
    expect(c.reports.map(([p]) => p)).toEqual([25, 50, 75, 100]);
  });
});
