// /metrics against Prometheus' own checker: the exposition of a running server that has seen
// jobs enqueued, claimed, completed and failed passes `promtool check metrics` (naming and
// type rules, e.g. only counters end in _total). promtool comes with Debian's `prometheus`
// package; .ci/run installs it.
import { execFile } from 'node:child_process';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { simulateWorker, suspendedJob, testServer, type TestServer } from './server-support.ts';
import { waitFor } from './support/wait.ts';

let s: TestServer;
beforeAll(async () => {
  s = await testServer({ listen: true });
});
afterAll(() => s.close());

function promtool(text: string): Promise<{ code: number; output: string }> {
  return new Promise((resolve, reject) => {
    const child = execFile('promtool', ['check', 'metrics'], (err, stdout, stderr) => {
      if (err && (err as NodeJS.ErrnoException).code === 'ENOENT') {
        reject(new Error('promtool not found: install Debian\'s "prometheus" package (apt-get install prometheus)'));
        return;
      }
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, output: stdout + stderr });
    });
    child.stdin!.end(text);
  });
}

// Mutation caught: herald_jobs_waiting counting without `available_at > now()` (a woken job still counted as waiting).
it('serves an exposition that promtool accepts, with jobs processed and failed, sleeping and waiting', async () => {
  const jobs = await s.db.queue.enqueueMany([
    ...Array.from({ length: 20 }, (_, i) => ({ kind: 'k', queue: i % 2 ? 'a' : 'b', payload: { i } })),
    { kind: 'k', queue: 'a', payload: { fail: true }, maxAttempts: 1 },
  ]);
  const stop = new AbortController();
  const worker = simulateWorker(s.db.queue, 'metrics-worker', stop.signal);
  await waitFor(async () => {
    const all = await Promise.all(jobs.map((j) => s.db.queue.get(j.job.id)));
    return all.every((j) => j?.status === 'succeeded' || j?.status === 'failed');
  }, { what: 'every job to finish' });
  stop.abort();
  await worker;
  // Durable jobs that sleep and wait (after the worker, which would claim the invoked child).
  const until = new Date(Date.now() + 3_600_000).toISOString();
  const approvals = [
    await suspendedJob(s.db.queue, 'orders', { type: 'signal', name: 'approve', until }),
    await suspendedJob(s.db.queue, 'orders', { type: 'signal', name: 'approve' }),
  ];
  await suspendedJob(s.db.queue, 'orders', { type: 'sleep', until });
  await suspendedJob(s.db.queue, 'orders', { type: 'child' });
  // The tailer has published every event once the failure is counted.
  let text = '';
  await waitFor(async () => /herald_jobs_failed_total\{queue="a",outcome="failed"\} 1/.test((text = await (await fetch(`${s.url}/metrics`)).text())), { what: 'the failed job to be counted in /metrics' });

  expect(text).toMatch(/^# TYPE herald_sse_clients_dropped_total counter$/m);
  expect(text).toMatch(/^herald_jobs_completed_total\{queue="b"\} 10$/m);
  const waiting = (t: string) => t.split('\n').filter((l) => l.startsWith('herald_jobs_waiting{')).sort();
  expect(waiting(text)).toEqual([
    'herald_jobs_waiting{queue="orders",waiting_for="child"} 1',
    'herald_jobs_waiting{queue="orders",waiting_for="signal"} 2',
    'herald_jobs_waiting{queue="orders",waiting_for="sleep"} 1',
  ]);
  const { code, output } = await promtool(text);
  expect(output.trim()).toBe('');
  expect(code).toBe(0);

  // A signal wakes its job: it no longer waits (it is due), though not yet claimed.
  await s.db.queue.signal(approvals[0], 'approve', { approved: true });
  await s.db.queue.cancel(approvals[1]);
  expect(waiting(await (await fetch(`${s.url}/metrics`)).text())).toEqual([
    'herald_jobs_waiting{queue="orders",waiting_for="child"} 1',
    'herald_jobs_waiting{queue="orders",waiting_for="signal"} 0',
    'herald_jobs_waiting{queue="orders",waiting_for="sleep"} 1',
  ]);
});
