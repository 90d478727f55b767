// Signals as terminals and process managers send them: to the whole process group, through the
// npm/npx wrappers users run Herald with. The first signal drains (running jobs finish on their
// first attempt, the embedded PostgreSQL stops last) and the wrapper exits 0; the same signal again
// a moment later (npm forwarding it) changes nothing; only one ≥ 2 s later exits at once.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { FORCE_EXIT_AFTER_MS, onSignalAt } from '../bin/process-life.ts';
import { startEmbedded } from '../queue/embedded.ts';
import { createPool } from '../queue/database.ts';
import { Queue } from '../queue/queue.ts';
import type { Job } from '../queue/job.ts';
import { workerTestContext } from './fixtures/worker-process.ts';
import { spawnCommand, spawnHerald, type HeraldProcess } from './support/herald-process.ts';
import { waitFor } from './support/wait.ts';

const t = workerTestContext();
const procs: HeraldProcess[] = [];
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-signals-'));
fs.chmodSync(dataDir, 0o755);
afterAll(async () => {
  await Promise.all(procs.map((p) => p.dispose()));
  fs.rmSync(dataDir, { recursive: true, force: true });
});

// Long enough to be seen running before the signal; the grace period outlasts it by far, so the
// drain lets it finish however slow the machine is.
const JOB = { kind: 'sleep', payload: { ms: 4000 } };
const GRACE = { HERALD_SHUTDOWN_GRACE_MS: '300000' };

function expectFirstAttemptSuccess(jobs: (Job | null)[], events: { type: string; attempt: number }[][]) {
  for (const job of jobs) expect(job).toMatchObject({ status: 'succeeded', attempt: 1, result: { slept: 4000 } });
  for (const e of events) expect(e.map((x) => [x.type, x.attempt])).toEqual([['enqueued', 0], ['claimed', 1], ['succeeded', 1]]);
}

describe('npm start', () => {
  // Two `npm start`s: slow on a loaded machine.
  it('drains on SIGINT, then on SIGTERM, to its process group, stops PostgreSQL last, and npm exits 0', { timeout: 480_000 }, async () => {
    const ids: string[] = [];
    // The second run starts from the first one's data directory, so one boot at the end reads both.
    for (const signal of ['SIGINT', 'SIGTERM'] as const) {
      const proc = spawnCommand(['npm', 'start'], {
        ...GRACE, PORT: '0', HERALD_DATA_DIR: dataDir, DATABASE_URL: undefined, HERALD_LISTEN_URL: undefined, HERALD_TOKENS: undefined, HOST: undefined,
      });
      procs.push(proc);
      const url = String((await proc.waitFor((l) => typeof l.url === 'string', 240_000)).url);
      await proc.waitForMessage(/^Herald is running/);
      const mine: string[] = [];
      for (let i = 0; i < 2; i++) {
        const res = await fetch(`${url}/api/jobs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(JOB) });
        mine.push(((await res.json()) as Job).id);
      }
      await waitFor(async () => {
        const jobs = await Promise.all(mine.map(async (id) => (await fetch(`${url}/api/jobs/${id}`)).json() as Promise<Job>));
        return jobs.every((j) => j.status === 'running');
      }, { what: `both jobs to run before ${signal}`, timeoutMs: 60_000 });

      proc.killGroup(signal);
      expect(await proc.exited, signal).toEqual({ code: 0, signal: null });
      expect(proc.lines.some((l) => l.msg === 'second signal: exiting now'), signal).toBe(false);
      // A clean shutdown removes postmaster.pid.
      expect(fs.existsSync(path.join(dataDir, 'pgdata', 'postmaster.pid')), signal).toBe(false);
      ids.push(...mine);
    }

    // The outcomes were written before PostgreSQL stopped: every job succeeded on its first
    // attempt. (Had the first run lost its outcomes, the second would have run them again.)
    const pg = await startEmbedded(dataDir);
    const pool = createPool(pg.url, { max: 1 });
    try {
      const queue = new Queue(pool);
      expectFirstAttemptSuccess(await Promise.all(ids.map((id) => queue.get(id))), await Promise.all(ids.map((id) => queue.events(id))));
    } finally {
      await pool.end();
      await pg.stop();
    }
  });
});

describe('npx herald worker', () => {
  it('drains on SIGTERM to its process group (npx forwards a second one) and npx exits 0', async () => {
    // npm_config_yes: npx links this repository's own bin without asking.
    const proc = spawnCommand(['npx', 'herald', 'worker'], { ...GRACE, DATABASE_URL: t.db.url, HERALD_LOG_LEVEL: 'debug', npm_config_yes: 'true' });
    procs.push(proc);
    await proc.waitForMessage(/^worker started$/, 120_000);
    const jobs = await t.db.queue.enqueueMany([JOB, JOB]);
    await waitFor(async () => {
      const now = await Promise.all(jobs.map((e) => t.db.queue.get(e.job.id)));
      return now.every((j) => j?.status === 'running');
    }, { what: 'both jobs to run', timeoutMs: 60_000 });

    proc.killGroup('SIGTERM');
    expect(await proc.exited).toEqual({ code: 0, signal: null });
    expect(proc.lines.some((l) => l.msg === 'second signal: exiting now')).toBe(false);
    expectFirstAttemptSuccess(
      await Promise.all(jobs.map((e) => t.db.queue.get(e.job.id))),
      await Promise.all(jobs.map((e) => t.db.queue.events(e.job.id))),
    );
  });
});

describe('a second signal', () => {
  it('within 2 s of the first is the same one seen twice; later, it asks to exit now', () => {
    expect(onSignalAt(undefined, 1000)).toBe('drain');
    expect(onSignalAt(1000, 1000)).toBe('ignore');
    expect(onSignalAt(1000, 1000 + FORCE_EXIT_AFTER_MS - 1)).toBe('ignore');
    expect(onSignalAt(1000, 1000 + FORCE_EXIT_AFTER_MS)).toBe('exit');
  });

  it('2 s after the first exits at once, abandoning the drain', async () => {
    const proc = spawnHerald(['worker'], { ...GRACE, DATABASE_URL: t.db.url, HERALD_LOG_LEVEL: 'debug' });
    procs.push(proc);
    await proc.waitForMessage(/^worker started$/);
    const { job } = await t.db.queue.enqueue({ kind: 'sleep', payload: { ms: 600_000 } });
    await waitFor(async () => (await t.db.queue.get(job.id))?.status === 'running', { what: 'the job to run' });

    proc.kill('SIGTERM');
    await proc.waitForMessage(/^worker stopping/);
    await new Promise((r) => setTimeout(r, FORCE_EXIT_AFTER_MS + 100));
    proc.kill('SIGTERM');
    expect(await proc.exited).toEqual({ code: 143, signal: null });
    expect(proc.lines.filter((l) => l.msg === 'second signal: exiting now')).toHaveLength(1);
    // Not drained: the job was left running (its lease expires and another worker takes it).
    expect(await t.db.queue.get(job.id)).toMatchObject({ status: 'running', attempt: 1 });
  });
});
