// Administration: cancel, retry, bulk actions over a filter, and queue settings. Each change
// can name its actor, which the events it writes (data.by) and the settings row record.
import { setTimeout } from 'node:timers/promises';
import { DEFAULTS, HOLD_SETTLE_MS, MAX_ATTEMPTS_LIMIT, type BulkAction } from '../defaults.ts';
import { ConflictError, fromPgError, ValidationError } from '../errors.ts';
import { toJob, type Job } from '../job.ts';
import type { Actor } from '../schema/index.ts';
import { filterValues, type JobFilter } from '../search.ts';
import { cancelJob, retryJob, runNowJob } from '../sql/admin.ts';
import { bulkStatements, dryRunStatements, purgeDeletedEvents } from '../sql/search.ts';
import { patchQueueSettings } from '../sql/settings.ts';
import { rethrowPg, retryOnConflict, type Db } from './db.ts';
import { ReadService } from './read.ts';
import type { QueueInfo, QueueSettingsPatch } from './settings.ts';

export interface BulkResult {
  /** Jobs the filter matched, in any status. */
  matched: number;
  /** Jobs the action changed (on a dry run: would change now). */
  affected: number;
}

export class AdminService {
  /** For the replies: the job after a refused change, the queue after a PATCH. */
  private readonly read: ReadService;

  constructor(private readonly db: Db) {
    this.read = new ReadService(db);
  }

  async cancel(id: string, actor?: Actor): Promise<Job> {
    const { rows } = await retryOnConflict(() => this.db.as(actor, (ex) => this.db.run(cancelJob, [id], ex)));
    if (rows[0]) return toJob(rows[0]);
    const job = await this.read.mustGet(id);
    throw new ConflictError(`job ${id} is already ${job.status}; only queued, blocked or running jobs can be cancelled`, 'HERALD_JOB_NOT_CANCELLABLE');
  }

  async retry(id: string, actor?: Actor): Promise<Job> {
    const { rows } = await retryOnConflict(() => this.db.as(actor, (ex) => this.db.run(retryJob, [id], ex)));
    if (rows[0]) return toJob(rows[0]);
    const job = await this.read.mustGet(id);
    if (job.status === 'failed' || job.status === 'cancelled') {
      throw new ConflictError(`job ${id} has used ${MAX_ATTEMPTS_LIMIT} attempts, the most a job may have`, 'HERALD_JOB_NOT_RETRYABLE');
    }
    throw new ConflictError(`job ${id} is ${job.status}; only failed or cancelled jobs can be retried`, 'HERALD_JOB_NOT_RETRYABLE');
  }

  /**
   * Makes a queued job that waits out its backoff or its runAt due now (a 'promoted' event). Any
   * other job: a ConflictError that says what it is doing instead, and nothing changes.
   */
  async runNow(id: string, actor?: Actor): Promise<Job> {
    const { rows } = await retryOnConflict(() => this.db.as(actor, (ex) => this.db.run(runNowJob, [id], ex)));
    if (rows[0]) return toJob(rows[0]);
    const job = await this.read.mustGet(id);
    const rule = 'run now applies to a queued job waiting out its backoff or its runAt';
    const w = job.wait;
    const what =
      job.status !== 'queued' ? `is ${job.status}`
      : w?.type === 'sleep' ? `is a durable handler's sleep until ${w.until}, which ends on its own`
      : w?.type === 'signal' ? `waits for signal "${w.name}" (send it, and it runs)`
      : w ? `waits for job ${w.childId}, which it invoked`
      : 'is due already';
    throw new ConflictError(`job ${id} ${what}; ${rule}`, 'HERALD_JOB_NOT_SCHEDULED');
  }

  /** What `bulk(action, filter)` would do now: the jobs matched (any status), and those it would change. */
  async bulkDryRun(action: BulkAction, filter: JobFilter): Promise<BulkResult> {
    const { rows } = await this.db.run(dryRunStatements[action], filterValues(filter)).catch(rethrowPg);
    return rows[0];
  }

  /**
   * Retries, cancels or deletes every job the filter matches that is in an eligible status,
   * in transactions of at most `batchSize` jobs, so the event stream and vacuum never wait on
   * one long transaction. Jobs enqueued after the call began are not touched.
   */
  async bulk(action: BulkAction, filter: JobFilter, opts: { actor?: Actor; batchSize?: number } = {}): Promise<BulkResult> {
    const { db } = this;
    const values = filterValues(filter);
    const batchSize = opts.batchSize ?? DEFAULTS.bulkBatch;
    const total = { matched: 0, affected: 0 };
    let cursor: string | null = null;
    for (;;) {
      const r: { matched: number; affected: number; last: string | null } = await retryOnConflict(() =>
        db.as(
          opts.actor,
          async (ex) => {
            const row = (await db.run(bulkStatements[action], [...values, cursor, batchSize], ex)).rows[0];
            if (action === 'delete' && row.affected > 0) await db.run(purgeDeletedEvents, [], ex);
            return row;
          },
          { transaction: action === 'delete' },
        ),
      );
      total.matched += r.matched;
      total.affected += r.affected;
      if (r.matched < batchSize || r.last === null) return total;
      cursor = r.last;
    }
  }

  /**
   * Changes a queue's settings (creating its row if needed) and returns its entry. The row
   * records `actor` and the time as its last change (updatedBy, updatedAt). A patch that pauses
   * or limits the queue returns HOLD_SETTLE_MS after its change committed: no job of the queue
   * starts after that, as a worker's start check admits starts for a shorter time than this
   * after it asked (worker/may-start.ts).
   */
  async patchQueue(queue: string, patch: QueueSettingsPatch, actor?: Actor): Promise<QueueInfo> {
    if (patch.deadLetter === queue) {
      throw new ValidationError(`deadLetter must name another queue: queue ${queue} cannot be its own dead-letter queue`);
    }
    try {
      await this.db.run(patchQueueSettings, [queue, JSON.stringify(patch), actor ? JSON.stringify(actor) : null]);
    } catch (err) {
      throw fromPgError(err);
    }
    if (holds(patch)) await setTimeout(HOLD_SETTLE_MS);
    const [info] = await this.read.counts(queue);
    return info;
  }
}

/** Whether a patch pauses the queue or sets a limit: then workers must stop starting what it holds back. */
const holds = (p: QueueSettingsPatch): boolean =>
  p.paused === true || [p.concurrency, p.groupConcurrency, p.rateLimit].some((v) => v != null);
