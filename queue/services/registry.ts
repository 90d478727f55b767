// The worker registry: a worker's own row in herald.workers (register at start and after every
// listener reconnect, refresh, unregister at stop). The list is read.ts's; dead rows are
// maintain.ts's.
import type { JsonOf, Nullable } from '../json.ts';
import type { workers } from '../schema/index.ts';
import { registerWorker, touchWorker, unregisterWorker } from '../sql/workers.ts';
import type { Db } from './db.ts';

/** What a worker tells the registry about itself: its herald.workers row, less the times the database keeps. `queues` null: every queue. */
export type WorkerRegistration = Omit<typeof workers.$inferSelect, 'startedAt' | 'lastSeenAt'>;

/**
 * A worker in GET /api/workers: its registry row (less the lock key), with the jobs it runs.
 * Registry fields are null for a holder of jobs that never registered.
 */
export type WorkerInfo = { worker: string } & Nullable<JsonOf<Omit<typeof workers.$inferSelect, 'id' | 'lockKey'>>> & {
  running: number;
  /** When its oldest running job started; null when idle. */
  since: string | null;
  jobs: string[];
};

export class RegistryService {
  constructor(private readonly db: Db) {}

  async registerWorker(w: WorkerRegistration): Promise<void> {
    await this.db.run(registerWorker, [w.id, w.host, w.pid, w.queues, w.kinds, w.capabilities, w.concurrency, w.lockKey]);
  }

  /** Refreshes last_seen_at; false when the row is gone (register again). */
  async touchWorker(id: string, lockKey: number | null): Promise<boolean> {
    return (await this.db.run(touchWorker, [id, lockKey])).rows.length === 1;
  }

  async unregisterWorker(id: string): Promise<void> {
    await this.db.run(unregisterWorker, [id]);
  }
}
