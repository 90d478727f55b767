// `herald worker --watch`: a task file edited while the worker runs is the code the next job
// runs, with no restart by hand (a process restarts the worker child on the change).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from './support/db.ts';
import { alive, spawnHerald, type HeraldProcess } from './support/herald-process.ts';
import { waitFor } from './support/wait.ts';

let db: TestDatabase;
let dir: string;
let proc: HeraldProcess | undefined;
beforeAll(async () => {
  db = await createTestDatabase();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-watch-'));
});
afterAll(async () => {
  await proc?.dispose();
  await db.drop();
  fs.rmSync(dir, { recursive: true, force: true });
});

const writeTask = (version: string) => fs.writeFileSync(path.join(dir, 'hello.ts'), `export default async () => ({ version: '${version}' });\n`);

async function resultOfNewJob(): Promise<unknown> {
  const { job } = await db.queue.enqueue({ kind: 'hello' });
  return waitFor(async () => {
    const j = await db.queue.get(job.id);
    return j?.status === 'succeeded' && j.result;
  }, { what: `job ${job.id} to succeed` });
}

// Mutation caught: watchWorker's fs.watch callback not restarting (the old code keeps running: v1 twice).
it('runs the edited task file after a change, without a restart by hand', { timeout: 120_000 }, async () => {
  writeTask('v1');
  proc = spawnHerald(['worker', '--watch', '--tasks', dir, '--queues', 'default'], { DATABASE_URL: db.url, HERALD_LOG_FORMAT: 'json' });
  await proc.waitForMessage(/^worker started/, 60_000);
  expect(await resultOfNewJob()).toEqual({ version: 'v1' });

  const starts = () => proc!.lines.filter((l) => typeof l.msg === 'string' && l.msg.startsWith('worker started')).length;
  writeTask('v2');
  await proc.waitForMessage(/^a task file changed: restarting the worker/);
  await waitFor(() => starts() === 2, { what: 'the second worker to start' });
  expect(await resultOfNewJob()).toEqual({ version: 'v2' });

  // Killed outright, the watcher takes its worker with it (no orphan left claiming jobs).
  const child = Number(proc.lines.filter((l) => typeof l.msg === 'string' && l.msg.startsWith('worker started')).at(-1)!.pid);
  await proc.dispose();
  await waitFor(() => !alive(child), { what: 'the worker child to exit after its parent was killed' });
});
