// Writes outcomes in batches: one complete() per flush for successes, one fail() per flush for
// failures: one UPDATE ... FROM unnest per batch is where the throughput is (a commit per job
// would cap the worker at the fsync rate). Writes are fenced in the core; an id that comes back "lost"
// had its lease taken, so nothing was written for it and we say so.
//
// One bad row must not hold up the others: if Postgres rejects a batch for its data (e.g. a
// result with "\u0000", which jsonb refuses), the batch is split and written row by row, and a
// result that cannot be stored fails its attempt with a clear error instead.
import type { Lease, WorkService } from '../queue/services/work.ts';
import type { Logger } from '../queue/log.ts';
import { Batcher } from './batcher.ts';
import { byId } from '../queue/job.ts';

/** Whose outcome: a held job (slots.ts's ActiveJob is one). */
export interface Outcome {
  lease: Lease;
  job: { kind: string; maxAttempts: number };
}

interface Success extends Outcome {
  /** The result as JSON text, serialised once when the handler returned. */
  json: string;
}

interface Failure extends Outcome {
  error: unknown;
  final: boolean;
  /** The durable step whose work threw it, if any. */
  step?: string;
}

export interface CompletionsOptions {
  work: WorkService;
  worker: string;
  logger: Logger;
  /** An outcome write starts (true), or failed and will be retried (false). */
  writing(leases: Lease[], now: boolean): void;
  /** Called once per outcome when it is written, lost, or given up on. */
  settled(lease: Lease): void;
  maxBatch?: number;
  delayMs?: number;
}

// SQLSTATE class 22 (data exception) and 54 (program limit, e.g. a value too large).
const isDataError = (err: unknown) => /^(22|54)/.test(String((err as { code?: string })?.code ?? ''));

export class Completions {
  private readonly successes: Batcher<Success>;
  private readonly failures: Batcher<Failure>;
  private readonly log: Logger;

  constructor(private readonly opts: CompletionsOptions) {
    this.log = opts.logger;
    const common = { maxSize: opts.maxBatch ?? 500, delayMs: opts.delayMs ?? 1, logger: opts.logger };
    this.successes = new Batcher({ ...common, name: 'complete', flush: (b) => this.marked(b, () => this.writeSuccesses(b)) });
    this.failures = new Batcher({ ...common, name: 'fail', flush: (b) => this.marked(b, () => this.writeFailures(b)) });
  }

  /** Queues a success; a result that is not JSON fails the attempt instead. */
  succeed(outcome: Outcome, result: unknown): void {
    let json: string;
    try {
      json = JSON.stringify(result ?? null);
    } catch (err) {
      const error = new TypeError(`the task's result is not JSON-serialisable: ${(err as Error).message}`);
      this.fail(outcome, error, false);
      return;
    }
    this.successes.add({ lease: outcome.lease, job: outcome.job, json });
  }

  fail(outcome: Outcome, error: unknown, final: boolean, step?: string): void {
    this.failures.add({ lease: outcome.lease, job: outcome.job, error, final, step });
  }

  get pending(): number {
    return this.successes.pending + this.failures.pending;
  }

  async drain(): Promise<void> {
    await Promise.all([this.successes.drain(), this.failures.drain()]);
    // A success that could not be stored became a failure while draining.
    await this.failures.drain();
  }

  // Marks the jobs whose outcome is being written (see Slots.writing).
  private async marked(batch: Outcome[], write: () => Promise<void>): Promise<void> {
    const leases = batch.map((o) => o.lease);
    this.opts.writing(leases, true);
    const t0 = performance.now();
    try {
      await write();
      this.log.debug({ outcomes: batch.length, ms: Math.round(performance.now() - t0) }, 'outcomes written');
    } finally {
      this.opts.writing(leases, false); // no-op for the settled ones
    }
  }

  private writeSuccesses(batch: Success[]): Promise<void> {
    const { work, worker } = this.opts;
    return this.writeSplitting(
      batch,
      (b) => {
        const sorted = b.length > 1 ? [...b].sort((x, y) => byId(x.lease, y.lease)) : b;
        return work.completeJson(worker, sorted.map((s) => s.lease), sorted.map((s) => s.json));
      },
      async (s, err) => {
        this.fail(s, new Error(`the task's result could not be stored: ${err.message}`), false);
        return null;
      },
      'succeeded',
    );
  }

  private writeFailures(batch: Failure[]): Promise<void> {
    const { work, worker } = this.opts;
    return this.writeSplitting(
      batch,
      (b) => work.fail(worker, b.map((f) => ({ ...f.lease, error: f.error, final: f.final, step: f.step })).sort(byId)),
      // The error itself could not be stored (e.g. "\u0000" in its message): keep what can be.
      (f, err) => {
        const error = new Error(`the task failed with an error that could not be stored: ${err.message}`);
        return work.fail(worker, [{ ...f.lease, error, final: f.final, step: f.step }]);
      },
      'failed',
    );
  }

  /**
   * Writes a batch (`write` returns the lost ids). If Postgres rejects it for its data, writes
   * it row by row so only the bad row is affected, and hands that one to `rejected` (which
   * returns lost ids, or null when it re-queued the outcome elsewhere).
   */
  private async writeSplitting<T extends Outcome>(
    batch: T[],
    write: (batch: T[]) => Promise<string[]>,
    rejected: (one: T, err: Error) => Promise<string[] | null>,
    what: 'succeeded' | 'failed',
  ): Promise<void> {
    let lost: string[] | null;
    try {
      lost = await write(batch);
    } catch (err) {
      if (!isDataError(err)) throw err;
      if (batch.length > 1) {
        for (const one of batch) await this.writeSplitting([one], write, rejected, what);
        return;
      }
      lost = await rejected(batch[0], err as Error);
      if (lost === null) return;
    }
    this.report(batch, lost, what);
  }

  private report(batch: Outcome[], lost: string[], what: 'succeeded' | 'failed'): void {
    const lostSet = new Set(lost);
    const debug = this.log.isLevelEnabled('debug');
    for (const o of batch) {
      const { id, attempt } = o.lease;
      if (lostSet.has(id)) {
        this.log.warn({ job: id, attempt, kind: o.job.kind }, `lease lost before the outcome was written; the ${what === 'succeeded' ? 'result' : 'failure'} was discarded`);
      } else if (debug) {
        if (what === 'succeeded') this.log.debug({ job: id, attempt, kind: o.job.kind }, 'job succeeded');
        else this.logFailure(o as Failure);
      }
      this.opts.settled(o.lease);
    }
  }

  private logFailure(f: Failure): void {
    const { id, attempt } = f.lease;
    const message = f.error instanceof Error ? f.error.message : String(f.error);
    // The core decides (a cancel request wins); this is what it decides from our side's view.
    const last = f.final || attempt >= f.job.maxAttempts;
    this.log.debug({ job: id, attempt, maxAttempts: f.job.maxAttempts, kind: f.job.kind, error: message }, last ? 'job failed' : 'attempt failed; retry scheduled');
  }
}
