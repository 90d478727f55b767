// Load: 1,000 SSE clients stay connected while 2,000 jobs/s are enqueued over HTTP for 60 s
// (half as single POSTs, half in batches of 10: see load-driver.ts).
// No 5xx, every client gets every event, server memory stays bounded; the stream's lag is reported.
import fs from 'node:fs';
import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import type { HeraldProcess } from '../support/herald-process.ts';
import { StreamRecorder, sleep, startServer } from './support.ts';
import { waitFor } from '../support/wait.ts';
import { writeReport } from './report.ts';

const CLIENTS = 1_000;
// Clients that follow every event; the rest follow one queue each, as a board tab on a queue does.
// Each firehose client parses ~2,000 events/s in this test process, which shares the 2 cores.
const FIREHOSE = Number(process.env.HERALD_LOAD_FIREHOSE ?? 3);
// Each queue-filtered client shares its queue with ~5 others (1,000 clients over 200 queues).
const QUEUES = 200;
const RATE = 2_000;
const SECONDS = Number(process.env.HERALD_LOAD_SECONDS ?? 60);

let db: TestDatabase;
let server: { proc: HeraldProcess; url: string };

beforeAll(async () => {
  db = await createTestDatabase();
  server = await startServer({ DATABASE_URL: db.url });
});
afterAll(async () => {
  await server?.proc.dispose();
  await db?.drop();
});

function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Math.round(Number(m![1]) / 1024);
}

describe('load', () => {
  it(`keeps ${CLIENTS} SSE clients live under ${RATE} enqueues/s for ${SECONDS} s`, async () => {
    const pid = server.proc.child.pid!;
    const clients = Array.from(
      { length: CLIENTS },
      (_, i) => new StreamRecorder(() => server.url, { from: '0', query: i < FIREHOSE ? '' : `queue=load-${i % QUEUES}` }),
    );
    // Every client is connected (the server's own count) before the load starts.
    await waitFor(async () => {
      const text = await (await fetch(`${server.url}/metrics`)).text();
      return Number(/^herald_sse_clients (\d+)/m.exec(text)?.[1] ?? 0) >= CLIENTS;
    }, { what: `${CLIENTS} SSE clients to be connected`, timeoutMs: 120_000, everyMs: 200 });
    const rssBefore = rssMb(pid);

    const lags: number[] = [];
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const h = await fetch(`${server.url}/api/health`).then((r) => r.json()).catch(() => null);
        if (h && typeof h.streamLagMs === 'number') lags.push(h.streamLagMs);
        await sleep(1_000);
      }
    })();

    const driver = spawn(process.execPath, ['bin/run-ts.js', 'test/system/load-driver.ts', server.url, String(RATE), String(SECONDS), String(QUEUES)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    driver.stdout.on('data', (d) => (out += d));
    await new Promise((resolve) => driver.once('exit', resolve));
    const result = JSON.parse(out.trim().split('\n').pop()!);
    const rssAfter = rssMb(pid);
    sampling = false;
    await sampler;

    // Every client gets every event it asked for, eventually.
    const { rows } = await db.pool.query(`SELECT queue, count(*)::int AS n FROM herald.job_events GROUP BY queue`);
    const perQueue = new Map(rows.map((r) => [r.queue, r.n]));
    const total = rows.reduce((s, r) => s + r.n, 0);
    const jobs = (await db.pool.query(`SELECT count(*)::int AS n FROM herald.jobs`)).rows[0].n as number;
    await waitFor(
      () => clients.every((c, i) => c.events.length >= (i < FIREHOSE ? total : perQueue.get(`load-${i % QUEUES}`) ?? 0)),
      { what: 'every SSE client to receive its events', timeoutMs: 120_000, everyMs: 500 },
    );
    const reconnects = clients.reduce((s, c) => s + c.reconnects, 0);
    const duplicates = clients.filter((c) => new Set(c.events.map((e) => e.eventId)).size !== c.events.length).length;
    await Promise.all(clients.map((c) => c.stop()));

    const figures = {
      clients: CLIENTS,
      firehoseClients: FIREHOSE,
      seconds: SECONDS,
      jobsEnqueued: jobs,
      jobsPerSecond: Math.round(jobs / SECONDS),
      single: result.single,
      batch: result.batch,
      rssMbBefore: rssBefore,
      rssMbAfter: rssAfter,
      streamLagMs: { max: Math.max(0, ...lags), samples: lags.length },
      sseReconnects: reconnects,
      eventsWritten: total,
    };
    writeReport('load', figures);
    for (const r of [result.single, result.batch]) {
      expect(r.errors).toBe(0);
      expect(r.fivexx).toBe(0);
      expect(r.non2xx).toBe(0);
    }
    // Every accepted request's jobs are stored (a request cut at the end may have been stored too).
    // The rate reached is a figure of the report: a busy machine sends less, and that is no failure.
    expect(jobs).toBeGreaterThanOrEqual(result.single.requests + 10 * result.batch.requests);
    expect(jobs).toBeGreaterThan(0);
    expect(duplicates).toBe(0);
    // The stream's lag is a figure of the report, not a bound: it measures the machine as much as
    // Herald. That every client got every event is the bound that matters (above).
    expect(lags.length).toBeGreaterThan(0);
    expect(rssAfter).toBeLessThan(1_024);
  });
});
