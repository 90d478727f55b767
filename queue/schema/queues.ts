// Queue control: per-queue settings, the gate the plain claim reads, and rate-limit windows.
import { sql } from 'drizzle-orm';
import { boolean, check, index, integer, jsonb, smallint, text } from 'drizzle-orm/pg-core';
import { QUEUE_LIMITS } from '../defaults.ts';
import { herald, validName, tstz } from './base.ts';

/** Who asked for a manual action: data.by on the events it writes, updated_by of queue settings. */
export interface Actor {
  /** The token's role; null when auth is off (no HERALD_TOKENS). */
  role: string | null;
  /** The token's label (HERALD_TOKENS entry role:label:token), when it has one. */
  label?: string;
}

// One row per queue that has settings; a queue without a row runs free. A claim of a queue
// with a limit locks its row FOR UPDATE, so such claims take turns (see queue/sql/claim-limited.ts).
export const queues = herald.table(
  'queues',
  {
    queue: text('queue').primaryKey(),
    paused: boolean('paused').notNull().default(false),
    concurrency: integer('concurrency'),
    groupConcurrency: integer('group_concurrency'),
    rateCount: integer('rate_count'),
    ratePeriodMs: integer('rate_period_ms'),
    updatedAt: tstz('updated_at').notNull().defaultNow(),
    // Who made the last change ({role, label?} as the token says); null for rows from before it
    // was recorded, or changed through the core API without an actor.
    updatedBy: jsonb('updated_by').$type<Actor>(),
    // The queue that gets a copy of each job of this one that fails for good; null: none.
    deadLetter: text('dead_letter'),
  },
  (t) => [
    check('queues_queue_name', validName(t.queue)),
    check('queues_concurrency_range', sql`${t.concurrency} BETWEEN ${sql.raw(String(QUEUE_LIMITS.concurrency.min))} AND ${sql.raw(String(QUEUE_LIMITS.concurrency.max))}`),
    check('queues_group_concurrency_range', sql`${t.groupConcurrency} BETWEEN ${sql.raw(String(QUEUE_LIMITS.concurrency.min))} AND ${sql.raw(String(QUEUE_LIMITS.concurrency.max))}`),
    check('queues_rate_count_range', sql`${t.rateCount} BETWEEN ${sql.raw(String(QUEUE_LIMITS.rateCount.min))} AND ${sql.raw(String(QUEUE_LIMITS.rateCount.max))}`),
    check('queues_rate_period_range', sql`${t.ratePeriodMs} BETWEEN ${sql.raw(String(QUEUE_LIMITS.ratePeriodMs.min))} AND ${sql.raw(String(QUEUE_LIMITS.ratePeriodMs.max))}`),
    check('queues_dead_letter_name', sql`${validName(t.deadLetter)} AND ${t.deadLetter} <> ${t.queue}`),
    check('queues_rate_both', sql`(${t.rateCount} IS NULL) = (${t.ratePeriodMs} IS NULL)`),
  ],
);

// The queues the plain claim must leave alone (paused, or with a limit), kept in ONE row by a
// trigger on herald.queues. The plain claim reads it FOR SHARE: a locked read returns the
// newest committed version, and a settings change must wait for claims in flight, so no claim
// can act on settings older than the last PATCH that returned.
export const queueGate = herald.table(
  'queue_gate',
  {
    id: smallint('id').primaryKey().default(1),
    held: text('held').array().notNull().default(sql`'{}'::text[]`),
    // The dead-letter queues (named by some queue's dead_letter): parking lots, which a claim for
    // every queue leaves alone; only a worker that names one works it.
    parked: text('parked').array().notNull().default(sql`'{}'::text[]`),
  },
  (t) => [check('queue_gate_one_row', sql`${t.id} = 1`)],
);

// Starts of rate-limited queues: the sliding window a claim counts. Written only by claims of
// rate-limited queues; pruned by the workers' maintenance.
export const queueStarts = herald.table(
  'queue_starts',
  {
    queue: text('queue').notNull(),
    at: tstz('at').notNull(),
  },
  (t) => [index('queue_starts_queue_at').on(t.queue, t.at)],
);
