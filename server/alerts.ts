// The alert conditions of ops/prometheus/alerts.yml, from this server's own view, for a user
// without Prometheus (GET /api/alerts, the board's Health page). Failures and lease expiries are
// counted off the event stream this server tails (like the /metrics counters), in one-minute
// buckets; queue heads and the stream's holder are read when asked, at most once a second.
import { ALERT_THRESHOLDS as T } from '../queue/defaults.ts';
import { isFinalFailure, runbookOf, type Alert, type AlertName } from '../queue/alerts.ts';
import type { Queue } from '../queue/queue.ts';
import type { EventHub } from './stream/hub.ts';
import type { ReadReplica } from '../queue/replica.ts';

const MINUTE_MS = 60_000;

/** Counts per key and minute, forgetting minutes older than the longest window. */
class MinuteCounts {
  private readonly buckets = new Map<string, Map<number, number>>();
  constructor(private readonly keepMin: number) {}

  add(key: string, at: number): void {
    const minute = Math.floor(at / MINUTE_MS);
    let b = this.buckets.get(key);
    if (!b) this.buckets.set(key, (b = new Map<number, number>()));
    b.set(minute, (b.get(minute) ?? 0) + 1);
    for (const m of b.keys()) if (m <= minute - this.keepMin) b.delete(m);
  }

  /** The count over the last `windowMin` minutes (this one included), per key. */
  sum(windowMin: number, now: number): Map<string, number> {
    const from = Math.floor(now / MINUTE_MS) - windowMin + 1;
    const out = new Map<string, number>();
    for (const [key, b] of this.buckets) {
      let n = 0;
      for (const [m, c] of b) if (m >= from) n += c;
      if (n > 0) out.set(key, n);
    }
    return out;
  }
}

export class AlertWatch {
  private readonly finished = new MinuteCounts(T.failingWindowMin);
  private readonly failures = new MinuteCounts(T.failingWindowMin);
  private readonly expiries = new MinuteCounts(T.leaseWindowMin);
  private heads?: { at: number; rows: ReturnType<Queue['queueHeads']> };

  constructor(
    private readonly queue: Queue,
    private readonly hub: EventHub,
    private readonly replica?: ReadReplica,
  ) {
    hub.fanout.observe((page) => {
      const now = Date.now();
      for (const e of page) {
        if (e.type === 'succeeded' || isFinalFailure(e)) this.finished.add(e.queue, now);
        if (isFinalFailure(e)) this.failures.add(e.queue, now);
        if (e.type === 'lease_expired') this.expiries.add('', now);
      }
    });
  }

  /** Each queue with a ready job: its oldest ready job's age and its live workers (one read a second, shared with /metrics). */
  queueHeads(): ReturnType<Queue['queueHeads']> {
    if (!this.heads || Date.now() - this.heads.at > 1000) {
      const rows = this.queue.queueHeads();
      rows.catch(() => (this.heads = undefined));
      this.heads = { at: Date.now(), rows };
    }
    return this.heads.rows;
  }

  /** The conditions that hold now. */
  async current(now = Date.now()): Promise<Alert[]> {
    const alerts: Alert[] = [];
    const add = (alert: AlertName, queue: string | null, summary: string) => alerts.push({ alert, queue, summary, runbook: runbookOf(alert) });

    const finished = this.finished.sum(T.failingWindowMin, now);
    for (const [queue, failed] of this.failures.sum(T.failingWindowMin, now)) {
      const ratio = failed / (finished.get(queue) ?? failed);
      if (failed >= T.failingMinJobs && ratio > T.failingRatio) {
        add('HeraldJobsFailing', queue, `${failed} of ${finished.get(queue)} jobs of queue ${queue} failed for good in the last ${T.failingWindowMin} min (${Math.round(ratio * 100)}%)`);
      }
    }
    const [heads, holder] = await Promise.all([this.queueHeads(), this.hub.holder().catch(() => null)]);
    for (const h of heads) {
      if (h.oldestReadyS !== null && h.oldestReadyS > T.stalledSeconds) {
        add('HeraldQueueStalled', h.queue, `the oldest ready job of queue ${h.queue} that a live worker runs has waited ${Math.round(h.oldestReadyS)} s`);
      }
      if (h.noWorker && h.noWorker.seconds > T.noWorkerSeconds) {
        const why = h.liveWorkers === 0 ? `no live worker takes queue ${h.queue}` : `no live worker of queue ${h.queue} runs kind ${h.noWorker.kind} (or has the capabilities it requires)`;
        add('HeraldNoWorker', h.queue, `the oldest ready job of queue ${h.queue} (kind ${h.noWorker.kind}) has waited ${Math.round(h.noWorker.seconds)} s: ${why}`);
      }
    }
    if (holder?.ageMs != null && holder.ageMs > T.streamHeldSeconds * 1000) {
      add('HeraldStreamHeld', null, `transaction ${holder.xid} (pid ${holder.pid ?? '?'}, ${holder.applicationName ?? 'unknown application'}) has held the event stream back for ${Math.round(holder.ageMs / 1000)} s`);
    }
    const expired = this.expiries.sum(T.leaseWindowMin, now).get('') ?? 0;
    if (expired >= T.leaseExpiries) {
      add('HeraldWorkersDying', null, `${expired} leases expired in the last ${T.leaseWindowMin} min: workers are dying, freezing or losing their connection`);
    }
    const replica = this.replica?.status();
    if (replica && replica.overLimitMs >= T.replicaLaggingSeconds * 1000) {
      add('HeraldReplicaLagging', null, `the read replica is ${Math.round(replica.lagMs / 1000)} s behind (limit ${replica.maxLagMs / 1000} s${replica.up ? '' : ', and it does not answer'}): this server reads the primary`);
    }
    return alerts;
  }
}
