// A queue's settings and counts as the API shows them; read by workers (which queues to claim
// one by one), changed by admins, listed with the counts.
import type { Actor } from '../schema/index.ts';
import type { QueueSettingsRow } from '../sql/settings.ts';

export interface QueueCount {
  queue: string;
  queued: number;
  scheduled: number;
  running: number;
  succeeded: number;
  failed: number;
  cancelled: number;
  /** Waiting for their parents (workflows): neither queued nor running for the queue's limits. */
  blocked: number;
}

interface RateLimit {
  count: number;
  periodMs: number;
}

/** A queue's settings (PATCH /api/queues/:queue). Null: no such limit. */
export interface QueueSettings {
  paused: boolean;
  concurrency: number | null;
  groupConcurrency: number | null;
  rateLimit: RateLimit | null;
  /** The queue that gets a copy of each job of this one that fails for good; null: none. */
  deadLetter: string | null;
}

/** A queue's entry in GET /api/queues: its counts, its settings and their last change. */
export type QueueInfo = QueueCount & QueueSettings & {
  /** Who last changed the settings; null when never changed, or not recorded (older rows, core API without an actor). */
  updatedBy: Actor | null;
  /** When the settings last changed (ISO); null for a queue that never had settings. */
  updatedAt: string | null;
};

/** A PATCH: an absent key keeps the setting, null clears a limit. */
export type QueueSettingsPatch = Partial<QueueSettings>;

export function toSettings(r: QueueSettingsRow): QueueSettings & { queue: string } {
  return {
    queue: r.queue,
    paused: r.paused ?? false,
    concurrency: r.concurrency ?? null,
    groupConcurrency: r.group_concurrency ?? null,
    rateLimit: r.rate_count === null || r.rate_period_ms === null ? null : { count: r.rate_count, periodMs: r.rate_period_ms },
    deadLetter: r.dead_letter ?? null,
  };
}
