// Administration: cancel, retry, bulk actions over a filter, and queue settings. Each change
// can name its actor, which the events it writes (data.by) and the settings row record.
import { DEFAULTS, MAX_ATTEMPTS_LIMIT, type BulkAction } from '../defaults.ts';
import { ConflictError, fromPgError } from '../errors.ts';
import { toJob, type Job } from '../job.ts';
import type { Actor } from '../schema/index.ts';
import { filterValues, type JobFilter } from '../search.ts';
import { cancelJob, retryJob } from '../sql/admin.ts';
import { bulkStatements, countJobs } from '../sql/search.ts';
import { patchQueueSettings } from '../sql/settings.ts';
import { rethrowPg, type Db } from './db.ts';
import { ReadService } from './read.ts';
import type { QueueInfo, QueueSettingsPatch } from './settings.ts';

export interface BulkResult {
  matched: number;
  affected?: number;
}

/** Runs fn again when PostgreSQL broke a deadlock or serialization conflict by aborting it. */
async function retryOnConflict<T>(fn: () => Promise<T>, tries = 5): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await fn();
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (i >= tries || (code !== '40P01' && code !== '40001')) throw fromPgError(err);
    }
  }
}

export class AdminService {
  /** For the replies: the job after a refused change, the queue after a PATCH. */
  private readonly read: ReadService;

  constructor(private readonly db: Db) {
    this.read = new ReadService(db);
  }

  async cancel(id: string, actor?: Actor): Promise<Job> {
    const { rows } = await this.db.as(actor, (ex) => this.db.run(cancelJob, [id], ex));
    if (rows[0]) return toJob(rows[0]);
    const job = await this.read.mustGet(id);
    throw new ConflictError(`job ${id} is already ${job.status}; only queued, blocked or running jobs can be cancelled`, 'HERALD_JOB_NOT_CANCELLABLE');
  }

  async retry(id: string, actor?: Actor): Promise<Job> {
    const { rows } = await this.db.as(actor, (ex) => this.db.run(retryJob, [id], ex));
    if (rows[0]) return toJob(rows[0]);
    const job = await this.read.mustGet(id);
    if (job.status === 'failed' || job.status === 'cancelled') {
      throw new ConflictError(`job ${id} has used ${MAX_ATTEMPTS_LIMIT} attempts, the most a job may have`, 'HERALD_JOB_NOT_RETRYABLE');
    }
    throw new ConflictError(`job ${id} is ${job.status}; only failed or cancelled jobs can be retried`, 'HERALD_JOB_NOT_RETRYABLE');
  }

  /** How many jobs match the filter (any status). */
  async countMatching(filter: JobFilter): Promise<number> {
    const { rows } = await this.db.run(countJobs, filterValues(filter)).catch(rethrowPg);
    return rows[0].n;
  }

  /**
   * Retries, cancels or deletes every job the filter matches that is in an eligible status,
   * in transactions of at most `batchSize` jobs, so the event stream and vacuum never wait on
   * one long transaction. Jobs enqueued after the call began are not touched.
   */
  async bulk(action: BulkAction, filter: JobFilter, opts: { actor?: Actor; batchSize?: number } = {}): Promise<Required<BulkResult>> {
    const { db } = this;
    const values = filterValues(filter);
    const batchSize = opts.batchSize ?? DEFAULTS.bulkBatch;
    const total = { matched: 0, affected: 0 };
    let cursor: string | null = null;
    for (;;) {
      const r: { matched: number; affected: number; last: string | null } = await retryOnConflict(() =>
        db.as(opts.actor, async (ex) => (await db.run(bulkStatements[action], [...values, cursor, batchSize], ex)).rows[0]),
      );
      total.matched += r.matched;
      total.affected += r.affected;
      if (r.matched < batchSize || r.last === null) return total;
      cursor = r.last;
    }
  }

  /**
   * Changes a queue's settings (creating its row if needed) and returns its entry. The row
   * records `actor` and the time as its last change (updatedBy, updatedAt).
   */
  async patchQueue(queue: string, patch: QueueSettingsPatch, actor?: Actor): Promise<QueueInfo> {
    try {
      await this.db.run(patchQueueSettings, [queue, JSON.stringify(patch), actor ? JSON.stringify(actor) : null]);
    } catch (err) {
      throw fromPgError(err);
    }
    const [info] = await this.read.counts(queue);
    return info;
  }
}
