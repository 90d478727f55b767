import type { Actor } from '../schema/index.ts';
import { statement } from './statement.ts';

/** A row of herald.queues. */
export interface QueueSettingsRow {
  queue: string;
  paused: boolean;
  concurrency: number | null;
  group_concurrency: number | null;
  rate_count: number | null;
  rate_period_ms: number | null;
  dead_letter: string | null;
  updated_at: Date | null;
  updated_by: Actor | null;
}

// PATCH semantics in one statement: $2 is the patch as JSON. A key that is absent keeps the
// stored value; a key set to null clears that limit. A queue needs no jobs to get settings.
// $3 (JSON {role, label?} or null) is who asked: every change records it with its time.
const patched = (key: string, column: string, cast: string) =>
  `CASE WHEN $2::jsonb ? '${key}' THEN ${cast} ELSE q.${column} END`;

export const patchQueueSettings = statement<[queue: string, patch: string, actor: string | null], QueueSettingsRow>(
  'patch_queue',
  `
INSERT INTO herald.queues AS q (queue, paused, concurrency, group_concurrency, rate_count, rate_period_ms, dead_letter, updated_by)
VALUES ($1,
        coalesce(($2::jsonb->>'paused')::boolean, false),
        ($2::jsonb->>'concurrency')::int,
        ($2::jsonb->>'groupConcurrency')::int,
        ($2::jsonb->'rateLimit'->>'count')::int,
        ($2::jsonb->'rateLimit'->>'periodMs')::int,
        $2::jsonb->>'deadLetter',
        $3::jsonb)
ON CONFLICT (queue) DO UPDATE SET
  paused = ${patched('paused', 'paused', `($2::jsonb->>'paused')::boolean`)},
  concurrency = ${patched('concurrency', 'concurrency', `($2::jsonb->>'concurrency')::int`)},
  group_concurrency = ${patched('groupConcurrency', 'group_concurrency', `($2::jsonb->>'groupConcurrency')::int`)},
  rate_count = ${patched('rateLimit', 'rate_count', `($2::jsonb->'rateLimit'->>'count')::int`)},
  rate_period_ms = ${patched('rateLimit', 'rate_period_ms', `($2::jsonb->'rateLimit'->>'periodMs')::int`)},
  dead_letter = ${patched('deadLetter', 'dead_letter', `$2::jsonb->>'deadLetter'`)},
  updated_at = now(),
  updated_by = $3::jsonb
RETURNING q.*`,
);

/**
 * Settings of the queues a plain claim leaves alone (paused or limited): what workers cache; and
 * whether each is a dead-letter queue, which a worker for every queue leaves alone.
 */
export const heldQueueSettings = statement<[], QueueSettingsRow & { parked: boolean }>(
  'held_queues',
  `
SELECT q.*, q.queue = ANY(g.parked) AS parked FROM herald.queues q, herald.queue_gate g
WHERE g.id = 1 AND q.queue = ANY(g.held)
ORDER BY q.queue`,
);

/**
 * What a job claimed ahead is checked against before it starts: the held queues and the
 * database's clock. A plain read suffices: its snapshot includes every settings change that
 * had returned to its caller, as the plain claim's locked read of the same row does.
 */
export const startGate = statement<[], { held: string[]; now: Date }>(
  'start_gate',
  `SELECT held, now() AS now FROM herald.queue_gate WHERE id = 1`,
);

/** Rate-window starts no window can count any more (older than their queue's period, or than a day). */
export const pruneQueueStarts = statement<[]>(
  'prune_queue_starts',
  `
DELETE FROM herald.queue_starts q
WHERE q.at < now() - make_interval(secs => coalesce(
        (SELECT s.rate_period_ms FROM herald.queues s WHERE s.queue = q.queue AND s.rate_count IS NOT NULL),
        0)::float8 / 1000)`,
);
