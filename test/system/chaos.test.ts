// Chaos: 10,000 jobs through 3 worker processes while a driver SIGKILLs workers, cuts the
// listener connections and restarts PostgreSQL. Nothing may be lost or done twice, and an SSE
// client that rode through it all must hold every event exactly once.
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { migrate } from '../../queue/migrate.ts';
import { spawnHerald, type HeraldProcess } from '../support/herald-process.ts';
import { ownCluster } from './cluster.ts';
import { StreamRecorder, sleep, startServer } from './support.ts';
import { waitFor } from '../support/wait.ts';
import { writeReport } from './report.ts';

const JOBS = 10_000;
const WORKERS = 3;
const SLOTS = 10;

const procs = new Set<HeraldProcess>();

/** A query error from a connection the PostgreSQL restart cut, or made while it was down. */
function cutByRestart(err: unknown): boolean {
  const e = err as { code?: string; message?: string };
  return (
    e.code === '57P01' || // admin_shutdown: terminating connection due to administrator command
    e.code === '57P03' || // cannot_connect_now: the database system is starting up or shutting down
    e.code === 'ECONNREFUSED' ||
    e.code === 'ECONNRESET' ||
    /^Connection terminated/.test(e.message ?? '')
  );
}
afterAll(async () => {
  await Promise.all([...procs].map((p) => p.dispose()));
});

describe('chaos', () => {
  it('runs every job to success exactly once through kills, cut listeners and a PostgreSQL restart', async () => {
    const cluster = await ownCluster('herald_chaos');
    try {
      await migrate(cluster.url);
      const pool = new pg.Pool({ connectionString: cluster.url, max: 2 });
      pool.on('error', (err) => {
        if (!cutByRestart(err)) throw err; // an idle connection the restart cut is expected; nothing else is
      });
      const env = {
        DATABASE_URL: cluster.url,
        HERALD_LISTEN_URL: undefined,
        HERALD_LOG_LEVEL: 'info',
        HERALD_LEASE_MS: '10000',
        HERALD_POLL_MS: '500',
        HERALD_BACKOFF_BASE_MS: '50',
        HERALD_BACKOFF_MAX_MS: '1000',
      };
      const server = await startServer(env);
      procs.add(server.proc);
      const spawnWorker = () => {
        const w = spawnHerald(['worker', '--concurrency', String(SLOTS)], env);
        procs.add(w);
        return w;
      };
      const workers = Array.from({ length: WORKERS }, spawnWorker);
      const recorder = new StreamRecorder(() => server.url, { from: '0' });

      // 75% sleeps of 10-100 ms, 25% flaky jobs that fail once or twice first.
      const started = Date.now();
      for (let i = 0; i < JOBS; i += 500) {
        const jobs = Array.from({ length: 500 }, (_, j) =>
          (i + j) % 4 === 0
            ? { kind: 'flaky', payload: { failTimes: 1 + ((i + j) % 8 === 0 ? 1 : 0) }, maxAttempts: 30 }
            : { kind: 'sleep', payload: { ms: 10 + ((i + j) * 37) % 91 }, maxAttempts: 30 },
        );
        const res = await fetch(`${server.url}/api/jobs/batch`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ jobs }),
        });
        expect(res.status).toBe(201);
      }

      // Each fault is counted from what it did, not from having been asked for: a kill by the
      // victim's exit signal, a cut by pg_terminate_backend's answer, the restart by the server's
      // start time, and the workers' comebacks by their "listener reconnected" lines.
      let kills = 0;
      let pgRestarts = 0;
      let listenerCuts = 0;
      // The one error the driver's own queries expect: its pooled connection died with the restart
      // (the server was shutting down, or not up yet). Any other error fails the test.
      const query = async <R extends pg.QueryResultRow>(text: string): Promise<pg.QueryResult<R>> => {
        for (let tries = 0; ; tries++) {
          try {
            return await pool.query<R>(text);
          } catch (err) {
            if (tries >= 20 || !cutByRestart(err)) throw err;
            await sleep(250);
          }
        }
      };
      const remaining = async () =>
        (await query<{ n: number }>(`SELECT count(*)::int AS n FROM herald.jobs WHERE status NOT IN ('succeeded', 'failed', 'cancelled')`)).rows[0].n;
      // Right after a restart or a kill every listener may still be on its way back (reconnect
      // backoff, a worker booting): the cut waits until there is one to cut.
      const cutListeners = async () => {
        const cut = await waitFor(async () => {
          const { rows } = await query<{ cut: boolean }>(
            `SELECT pg_terminate_backend(pid) AS cut FROM pg_stat_activity WHERE datname = current_database() AND application_name LIKE 'herald%listen%'`,
          );
          return rows.filter((r) => r.cut).length;
        }, { what: 'a listener connection to cut', everyMs: 100 });
        listenerCuts += cut;
      };
      const startTime = async () => (await query<{ t: Date }>('SELECT pg_postmaster_start_time() AS t')).rows[0].t.getTime();

      // The driver: a kill every 2 s; listeners cut at 3 s and 9 s; PostgreSQL restarted at 6 s.
      // It goes on until the jobs are done and every fault of that plan has been dealt.
      const LAST_FAULT_TICK = 9;
      let tick = 0;
      for (;;) {
        await sleep(1_000);
        tick++;
        const left = await remaining();
        if (left === 0 && tick > LAST_FAULT_TICK) break;
        if (Date.now() - started > 8 * 60_000) throw new Error(`chaos run did not finish: ${left} jobs left`);
        if (tick % 2 === 0) {
          const victim = Math.floor(Math.random() * WORKERS);
          const killed = workers[victim];
          killed.kill('SIGKILL');
          workers[victim] = spawnWorker();
          if ((await killed.exited).signal === 'SIGKILL') kills++;
        }
        if (tick === 3 || tick === LAST_FAULT_TICK) await cutListeners();
        if (tick === 6) {
          const before = await startTime();
          await cluster.restart();
          if ((await startTime()) > before) pgRestarts++;
        }
        if (tick % 5 === 0) recorder.drop();
      }
      const duration = (Date.now() - started) / 1000;

      const { rows: statuses } = await pool.query(`SELECT status, count(*)::int AS n FROM herald.jobs GROUP BY status`);
      expect(statuses).toEqual([{ status: 'succeeded', n: JOBS }]);
      const { rows: doubled } = await pool.query(`
        SELECT job_id FROM herald.job_events GROUP BY job_id
        HAVING count(*) FILTER (WHERE type = 'succeeded') <> 1`);
      expect(doubled).toEqual([]);
      // Every claim is an attempt, except the ones shutdown handed back (released).
      const { rows: disagree } = await pool.query(`
        SELECT j.id, j.attempt, e.claims, e.releases FROM herald.jobs j
        JOIN (SELECT job_id, count(*) FILTER (WHERE type = 'claimed')::int AS claims,
                     count(*) FILTER (WHERE type = 'released')::int AS releases
              FROM herald.job_events GROUP BY job_id) e ON e.job_id = j.id
        WHERE j.attempt <> e.claims - e.releases`);
      expect(disagree).toEqual([]);

      const { rows: all } = await pool.query(`SELECT e.id::text AS id FROM herald.job_events e ORDER BY e.id`);
      await waitFor(() => recorder.events.length >= all.length, { what: `the SSE client to catch up (${all.length} events)`, timeoutMs: 120_000 }).catch((err) => {
        throw new Error(`${err.message}: it has ${recorder.events.length}, after ${recorder.reconnects} reconnects; the server said:\n${server.proc.tail(30)}`);
      });
      // A moment more: a duplicate sent after the last expected event would show up below.
      await sleep(500);
      await recorder.stop();
      const received = recorder.events.map((e) => e.eventId);
      expect(new Set(received).size).toBe(received.length);
      expect([...received].sort((a, b) => Number(a) - Number(b))).toEqual(all.map((r) => r.id));

      expect(kills, 'workers killed by SIGKILL').toBeGreaterThanOrEqual(Math.floor(LAST_FAULT_TICK / 2));
      expect(pgRestarts, 'PostgreSQL restarts').toBe(1);
      expect(listenerCuts).toBeGreaterThanOrEqual(2);
      const reconnects = [...procs].flatMap((p) => p.lines).filter((l) => l.msg === 'listener reconnected').length;
      expect(reconnects, 'worker listeners back after a cut or the restart').toBeGreaterThan(0);
      expect(recorder.reconnects, 'SSE reconnects').toBeGreaterThan(0);

      const { rows: attempts } = await pool.query(`SELECT sum(attempt)::int AS attempts FROM herald.jobs`);
      writeReport('chaos', {
        jobs: JOBS,
        workers: WORKERS,
        slots: SLOTS,
        kills,
        listenerConnectionsCut: listenerCuts,
        postgresRestarts: pgRestarts,
        durationSeconds: duration,
        attempts: attempts[0].attempts,
        lostJobs: JOBS - statuses[0].n,
        duplicateSuccesses: doubled.length,
        sseEventsExpected: all.length,
        sseEventsReceived: received.length,
        sseReconnects: recorder.reconnects,
        workerListenerReconnects: reconnects,
      });
      await pool.end();
    } finally {
      await Promise.all([...procs].map((p) => p.dispose()));
      procs.clear();
      await cluster.close();
    }
  });
});
