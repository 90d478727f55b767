// Producing: enqueue (coalesced) and enqueueMany (one transaction). The coalescer is this
// service's state, so only a process that produces carries it.
import { ConflictError, fromPgError } from '../errors.ts';
import type { EnqueueRecord } from '../sql/enqueue.ts';
import type { Db } from './db.ts';
import { insertJobs, toRecord, type EnqueueInput, type Enqueued } from './insert.ts';
import { checkProducerKey } from '../schedule-keys.ts';
import { traceSends } from '../tracing.ts';
import { FlowService } from './flows.ts';

/** Coalesced enqueue statements in flight at once (see ProduceService.enqueue). */
const ENQUEUE_FLUSHES = 4;
/** Calls waiting that justify a statement beside one already in flight (see ProduceService.enqueue). */
export const PARALLEL_BATCH = 16;

interface PendingEnqueue {
  record: EnqueueRecord;
  resolve: (e: Enqueued) => void;
  reject: (err: unknown) => void;
}

const settle = (p: PendingEnqueue, r: Enqueued | Error) => (r instanceof Error ? p.reject(r) : p.resolve(r));

export class ProduceService {
  private pending: PendingEnqueue[] = [];
  private flushes = 0;

  /** Jobs with dependsOn go through the flows (parents locked, edges, settled at once). */
  private flowService?: FlowService;

  constructor(private readonly db: Db) {}

  private get flows() {
    return (this.flowService ??= new FlowService(this.db));
  }

  /**
   * One job. Concurrent calls are coalesced: while INSERTs are in flight, new calls queue up and
   * go together in the next one. No added latency when idle, and under load one statement (one
   * commit, one NOTIFY) carries many jobs. Each call still succeeds or fails on its own.
   * A call that finds no statement in flight starts one at once. Beside one in flight, another
   * starts only for PARALLEL_BATCH waiting calls (up to ENQUEUE_FLUSHES at once), so a backlog's
   * commit (a WAL flush, the slowest step) overlaps the next batch's insert; fewer wait one
   * statement's time and go together. (When any freed slot started a statement, it took the one
   * call that came next alone: under 32 concurrent HTTP producers about 5 jobs a statement, with
   * as many commits, NOTIFYs and stream reads; now about 9.)
   */
  enqueue(input: EnqueueInput): Promise<Enqueued> {
    if (input.dependsOn?.length) return this.flows.enqueueAfter([input]).then(([made]) => made);
    return new Promise((resolve, reject) => {
      let record: EnqueueRecord;
      try {
        checkProducerKey(input.idempotencyKey);
        record = toRecord(input);
      } catch (err) {
        return reject(err);
      }
      // The send span (only with an OpenTelemetry SDK) ends with the call's own outcome.
      const sent = traceSends([record]);
      this.pending.push(
        sent
          ? { record, resolve: (e: Enqueued) => (sent([e.job.id]), resolve(e)), reject: (err: unknown) => (sent(null, err), reject(err)) }
          : { record, resolve, reject },
      );
      if (this.flushes === 0 || (this.flushes < ENQUEUE_FLUSHES && this.pending.length >= PARALLEL_BATCH)) void this.flushPending();
    });
  }

  private async flushPending(): Promise<void> {
    this.flushes++;
    while (this.pending.length) {
      const batch = this.pending.splice(0, 500);
      try {
        const results = await this.insertRecords(batch.map((b) => b.record), 'each');
        results.forEach((r, i) => settle(batch[i], r));
      } catch (err) {
        if (batch.length === 1) {
          batch[0].reject(err);
          continue;
        }
        // One bad row fails the whole statement: retry the calls one by one, so only it fails.
        for (const b of batch) {
          await this.insertRecords([b.record], 'each').then(([r]) => settle(b, r), b.reject);
        }
      }
    }
    this.flushes--;
  }

  /** All or nothing: one transaction. Results come back in input order. */
  async enqueueMany(inputs: EnqueueInput[]): Promise<Enqueued[]> {
    if (inputs.length === 0) return [];
    if (inputs.some((i) => i.dependsOn?.length)) return this.flows.enqueueAfter(inputs);
    for (const input of inputs) checkProducerKey(input.idempotencyKey);
    const records = inputs.map(toRecord);
    const sent = traceSends(records);
    const made = (await this.insertRecords(records, 'all').catch((err: unknown) => (sent?.(null, err), Promise.reject(err)))) as Enqueued[];
    sent?.(made.map((e) => e.job.id));
    return made;
  }

  // 'all': the first conflict rolls everything back (a batch request). 'each': conflicts are
  // returned per record and the rest is kept (coalesced single enqueues).
  private async insertRecords(records: EnqueueRecord[], atomic: 'all' | 'each'): Promise<(Enqueued | ConflictError)[]> {
    const { db } = this;
    const keyed = records.some((r) => r.idempotency_key !== null);
    try {
      // Without keys it is one statement, atomic by itself; keys need the look-up in the same transaction.
      if (!keyed) return await insertJobs(db, db.pool, records);
      return await db.transaction(async (c) => {
        const results = await insertJobs(db, c, records);
        const conflict = results.find((r) => r instanceof ConflictError);
        if (atomic === 'all' && conflict) throw conflict;
        return results;
      });
    } catch (err) {
      throw fromPgError(err);
    }
  }
}
