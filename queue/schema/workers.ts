// Live worker processes.
import { integer, text } from 'drizzle-orm/pg-core';
import { herald, tstz } from './base.ts';

// Every live worker process, idle ones too: it registers at start, refreshes last_seen_at,
// and deletes its row on shutdown. A crashed one is recognised by its vanished liveness lock
// (lock_key) or a stale last_seen_at, and its row is removed by the maintenance pass.
export const workers = herald.table('workers', {
  id: text('id').primaryKey(),
  host: text('host').notNull(),
  pid: integer('pid').notNull(),
  // Null: every queue.
  queues: text('queues').array(),
  kinds: text('kinds').array().notNull(),
  capabilities: text('capabilities').array().notNull(),
  concurrency: integer('concurrency').notNull(),
  lockKey: integer('lock_key'),
  startedAt: tstz('started_at').notNull().defaultNow(),
  lastSeenAt: tstz('last_seen_at').notNull().defaultNow(),
});
