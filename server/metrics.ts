// Prometheus metrics. Job counts and table health are read at scrape time; the work counters
// are derived from the event stream this server tails, so they count what every worker did.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Queue } from '../queue/queue.ts';
import type { EventHub } from './stream/hub.ts';
import { isFinalFailure } from '../queue/alerts.ts';
import { QUEUE_HEAD_LOOK_PAST } from '../queue/defaults.ts';
import type { AlertWatch } from './alerts.ts';
import type { ReadReplica } from '../queue/replica.ts';
import { DURABLE_WAITS } from '../queue/search.ts';

const STATUSES = ['queued', 'scheduled', 'running', 'succeeded', 'failed', 'cancelled'] as const;

export function createMetrics(queue: Queue, hub: EventHub, alerts: AlertWatch, replica?: ReadReplica): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  // prom-client also exports these three per-type sums as gauges named *_total, which the
  // Prometheus naming rules reserve for counters (promtool rejects them). The labelled gauges
  // (nodejs_active_handles{type} …) carry the same numbers: sum() them in PromQL.
  for (const name of ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total']) {
    registry.removeSingleMetric(name);
  }

  new Gauge({
    name: 'herald_jobs',
    help: 'Jobs by queue and status (queued = runnable now, scheduled = runAt in the future)',
    labelNames: ['queue', 'status'],
    registers: [registry],
    async collect() {
      this.reset();
      // While the database is unreachable the scrape still answers, without these series.
      const rows = await queue.counts().catch(() => []);
      for (const row of rows) for (const s of STATUSES) this.set({ queue: row.queue, status: s }, row[s]);
    },
  });
  // A subset of herald_jobs{status="scheduled"}: what sleeps (ctx.sleep) and what waits for a
  // person or a webhook (ctx.waitFor) or for a job it invoked. A queue that had such a job since
  // this server started keeps a series of each wait, so its count drops to 0 rather than vanishing.
  const waited = new Set<string>();
  new Gauge({
    name: 'herald_jobs_waiting',
    help: 'Queued jobs whose durable handler sleeps (sleep), waits for a signal (signal) or for a job it invoked (child), by queue',
    labelNames: ['queue', 'waiting_for'],
    registers: [registry],
    async collect() {
      this.reset();
      const rows = await queue.durableWaiting().catch(() => []);
      for (const r of rows) waited.add(r.queue);
      for (const q of waited) for (const w of DURABLE_WAITS) this.set({ queue: q, waiting_for: w }, 0);
      for (const r of rows) this.set({ queue: r.queue, waiting_for: r.waitingFor }, r.jobs);
    },
  });
  new Gauge({
    name: 'herald_database_up',
    help: '1 while the event tailer can read the database',
    registers: [registry],
    collect() {
      this.set(hub.tailer.dbUp ? 1 : 0);
    },
  });

  const counter = (name: string, help: string, labelNames: string[] = ['queue']) =>
    new Counter({ name, help, labelNames, registers: [registry] });
  const enqueued = counter('herald_jobs_enqueued_total', 'Jobs enqueued (seen on the event stream since this server started)');
  const claimed = counter('herald_jobs_claimed_total', 'Job attempts claimed by workers');
  const completed = counter('herald_jobs_completed_total', 'Jobs that succeeded');
  const failed = counter('herald_jobs_failed_total', 'Failed attempts; outcome retry_scheduled or failed (out of attempts)', ['queue', 'outcome']);
  const leaseExpired = counter('herald_jobs_lease_expired_total', 'Attempts the reaper ended: lease ran out, owner died, or timeout (reason)', ['queue', 'reason']);
  const events = counter('herald_stream_events_total', 'Events read by the tailer', []);
  // A queue's counters start at 0 the first time it is seen, so rate() and increase() count its
  // first failure too (a series that appears at 1 has no increase to show).
  const seen = new Set<string>();
  const zero = (queue: string) => {
    seen.add(queue);
    completed.inc({ queue }, 0);
    for (const outcome of ['retry_scheduled', 'failed']) failed.inc({ queue, outcome }, 0);
  };
  const delay = new Histogram({
    name: 'herald_stream_delivery_seconds',
    help: 'From an event being written (its transaction start) to the tailer publishing it',
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });

  hub.fanout.observe((page) => {
    const now = Date.now();
    events.inc(page.length);
    for (const e of page) {
      if (!seen.has(e.queue)) zero(e.queue);
      switch (e.type) {
        case 'enqueued': enqueued.inc({ queue: e.queue }); break;
        case 'claimed': claimed.inc({ queue: e.queue }); break;
        case 'succeeded': completed.inc({ queue: e.queue }); break;
        case 'retry_scheduled':
        case 'failed': failed.inc({ queue: e.queue, outcome: e.type }); break;
        case 'lease_expired':
          leaseExpired.inc({ queue: e.queue, reason: (e.data as { reason?: string } | null)?.reason ?? 'unknown' });
          // The reaper's last expiry fails the job for good: a failure like a worker's.
          if (isFinalFailure(e)) failed.inc({ queue: e.queue, outcome: 'failed' });
          break;
        default: break; // the other types have no counter of their own
      }
    }
    delay.observe(Math.max(0, now - Date.parse(page[page.length - 1].at)) / 1000);
  });

  // What HeraldQueueStalled and HeraldNoWorker read: per queue with a ready job (paused and
  // dead-letter queues left out), from an index walk of a few rows per queue, not a count. A
  // series is left out where its value is null (no ready job a live worker runs; a head that runs).
  type Head = Awaited<ReturnType<AlertWatch['queueHeads']>>[number];
  const headGauge = <L extends string>(name: string, help: string, labelNames: L[], pick: (h: Head) => [Record<L, string>, number] | null) =>
    new Gauge({
      name,
      help,
      labelNames,
      registers: [registry],
      async collect() {
        this.reset();
        for (const h of await alerts.queueHeads().catch(() => [])) {
          const point = pick(h);
          if (point) this.set(point[0], point[1]);
        }
      },
    });
  headGauge(
    'herald_queue_oldest_ready_age_seconds',
    'How long the oldest ready job of the queue that a live worker runs has waited to start (not paused or dead-letter queues; ' +
      `jobs no live worker runs are looked past, up to ${QUEUE_HEAD_LOOK_PAST.toLocaleString('en-US')} of them)`,
    ['queue'],
    (h) => (h.oldestReadyS === null ? null : [{ queue: h.queue }, h.oldestReadyS]),
  );
  headGauge(
    'herald_queue_no_worker_age_seconds',
    'How long the oldest ready job of the queue has waited while no live worker runs it (takes its queue, knows its kind, has the capabilities it requires); kind is its kind',
    ['queue', 'kind'],
    (h) => (h.noWorker ? [{ queue: h.queue, kind: h.noWorker.kind }, h.noWorker.seconds] : null),
  );
  headGauge('herald_queue_live_workers', 'Live workers that take the queue (queues with a ready job; not paused or dead-letter queues)', ['queue'], (h) => [{ queue: h.queue }, h.liveWorkers]);

  new Gauge({
    name: 'herald_sse_clients',
    help: 'Connected SSE clients',
    registers: [registry],
    collect() {
      this.set(hub.sessions.size);
    },
  });
  new Counter({
    name: 'herald_sse_clients_dropped_total',
    help: 'SSE clients disconnected for being too slow (they resume with Last-Event-ID)',
    registers: [registry],
    collect() {
      // The hub keeps the count (it only grows); the counter reports it at scrape time.
      this.reset();
      this.inc(hub.droppedClients);
    },
  });
  new Gauge({
    name: 'herald_stream_lag_seconds',
    help: 'Time since the tailer last had read every committed event',
    registers: [registry],
    collect() {
      const lag = hub.lagMs();
      if (lag !== null) this.set(lag / 1000);
    },
  });

  // The session that holds the stream back (see hub.holder): its transaction's age and its query's
  // start, labelled with who it is, so an alert can say what to end. No series while none does.
  let holder: { at: number; value: ReturnType<EventHub['holder']> } | undefined;
  const currentHolder = () => {
    if (!holder || Date.now() - holder.at > 1000) holder = { at: Date.now(), value: hub.holder().catch(() => null) };
    return holder.value;
  };
  const holderGauge = (name: string, help: string, pick: (h: NonNullable<Awaited<ReturnType<EventHub['holder']>>>) => number | null) =>
    new Gauge({
      name,
      help,
      labelNames: ['pid', 'application_name', 'state', 'xid', 'gid'],
      registers: [registry],
      async collect() {
        this.reset();
        const h = await currentHolder();
        const v = h && pick(h);
        if (h && v !== null) this.set({ pid: String(h.pid ?? ''), application_name: h.applicationName ?? '', state: h.state ?? '', xid: h.xid, gid: h.gid ?? '' }, v);
      },
    });
  holderGauge('herald_stream_holder_transaction_age_seconds', 'Age of the open transaction that holds the event stream back (named once open 1 s)', (h) =>
    h.ageMs === null ? null : h.ageMs / 1000,
  );
  holderGauge('herald_stream_holder_query_start_timestamp_seconds', "Start of that session's current or last query, Unix time", (h) =>
    h.queryStart ? Date.parse(h.queryStart) / 1000 : null,
  );

  // The three table gauges share one read per scrape.
  let stats: { at: number; rows: ReturnType<Queue['tableStats']> } | undefined;
  const tableStats = () => {
    if (!stats || Date.now() - stats.at > 1000) {
      const rows = queue.tableStats();
      rows.catch(() => (stats = undefined));
      stats = { at: Date.now(), rows };
    }
    return stats.rows;
  };
  const tableGauge = (name: string, help: string, pick: (t: Awaited<ReturnType<Queue['tableStats']>>[number]) => number | null) =>
    new Gauge({
      name,
      help,
      labelNames: ['table'],
      registers: [registry],
      async collect() {
        this.reset();
        for (const t of await tableStats().catch(() => [])) {
          const v = pick(t);
          if (v !== null) this.set({ table: t.name }, v);
        }
      },
    });
  tableGauge('herald_table_dead_tuples', 'Dead tuples (pg_stat_user_tables.n_dead_tup)', (t) => t.deadTuples);
  tableGauge('herald_table_live_tuples', 'Live tuples (pg_stat_user_tables.n_live_tup)', (t) => t.liveTuples);
  tableGauge('herald_table_last_autovacuum_timestamp_seconds', 'Last autovacuum, Unix time', (t) =>
    t.lastAutovacuum ? Date.parse(t.lastAutovacuum) / 1000 : null,
  );
  if (replica) replicaMetrics(registry, replica);
  return registry;
}

/** The read replica (HERALD_READ_URL), when there is one: what HeraldReplicaLagging reads. */
function replicaMetrics(registry: Registry, replica: ReadReplica): void {
  const gauge = (name: string, help: string, value: () => number) =>
    new Gauge({ name, help, registers: [registry], collect() { this.set(value()); } });
  gauge('herald_replica_lag_seconds', 'Age of the oldest write of the primary the read replica has not replayed (it grows while the replica is down)', () => replica.lagMs() / 1000);
  gauge('herald_replica_max_lag_seconds', 'HERALD_READ_MAX_LAG_MS: past this lag the server reads the primary', () => replica.maxLagMs / 1000);
  gauge('herald_replica_up', '1 while the read replica answers', () => (replica.status().up ? 1 : 0));
  gauge('herald_replica_reading', '1 while reads go to the replica, 0 while they go to the primary', () => (replica.usable ? 1 : 0));
  new Counter({
    name: 'herald_replica_reads_total',
    help: 'Reads of the stream and the board that this server sent to the replica or (while it was down or behind) the primary',
    labelNames: ['on'],
    registers: [registry],
    collect() {
      this.reset();
      this.inc({ on: 'replica' }, replica.served.replica);
      this.inc({ on: 'primary' }, replica.served.primary);
    },
  });
}
