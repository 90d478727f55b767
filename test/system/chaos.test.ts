// Chaos: 10,000 jobs through 3 worker processes while a driver SIGKILLs workers, cuts the
// listener connections and restarts PostgreSQL. Nothing may be lost or done twice, and an SSE
// client that rode through it all must hold every event exactly once.
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { migrate } from '../../queue/migrate.ts';
import { spawnHerald, type HeraldProcess } from '../support/herald-process.ts';
import { ownCluster } from './cluster.ts';
import { StreamRecorder, sleep, startServer, waitUntil } from './support.ts';
import { writeReport } from './report.ts';

const JOBS = 10_000;
const WORKERS = 3;
const SLOTS = 10;

const procs = new Set<HeraldProcess>();
afterAll(async () => {
  await Promise.all([...procs].map((p) => p.dispose()));
});

describe('chaos', () => {
  it('runs every job to success exactly once through kills, cut listeners and a PostgreSQL restart', async () => {
    const cluster = await ownCluster('herald_chaos');
    try {
      await migrate(cluster.url);
      const pool = new pg.Pool({ connectionString: cluster.url, max: 2 });
      pool.on('error', () => {});
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

      let kills = 0;
      let pgRestarts = 0;
      let listenerCuts = 0;
      const remaining = async () => {
        const { rows } = await pool.query(`SELECT count(*)::int AS n FROM herald.jobs WHERE status NOT IN ('succeeded', 'failed', 'cancelled')`);
        return rows[0].n as number;
      };
      const cutListeners = async () => {
        const { rowCount } = await pool.query(
          `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND application_name LIKE 'herald%listen%'`,
        );
        listenerCuts += rowCount ?? 0;
      };

      // The driver: a kill every 2 s; listeners cut at 3 s and 9 s; PostgreSQL restarted at 6 s.
      let tick = 0;
      for (;;) {
        await sleep(1_000);
        tick++;
        const left = await remaining().catch(() => -1);
        if (left === 0) break;
        if (Date.now() - started > 8 * 60_000) throw new Error(`chaos run did not finish: ${left} jobs left`);
        if (tick % 2 === 0) {
          const victim = Math.floor(Math.random() * WORKERS);
          workers[victim].kill('SIGKILL');
          workers[victim] = spawnWorker();
          kills++;
        }
        if (tick === 3 || tick === 9) await cutListeners().catch(() => {});
        if (tick === 6) {
          await cluster.restart();
          pgRestarts++;
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
      await waitUntil(() => recorder.events.length >= all.length, 120_000, `the SSE client to catch up (${all.length} events)`);
      await sleep(500);
      await recorder.stop();
      const received = recorder.events.map((e) => e.eventId);
      expect(new Set(received).size).toBe(received.length);
      expect([...received].sort((a, b) => Number(a) - Number(b))).toEqual(all.map((r) => r.id));

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
      });
      await pool.end();
    } finally {
      await Promise.all([...procs].map((p) => p.dispose()));
      procs.clear();
      await cluster.close();
    }
  });
});
