// Recurring jobs.
import { sql } from 'drizzle-orm';
import { bigint, boolean, check, index, jsonb, text } from 'drizzle-orm/pg-core';
import { herald, validName, tstz } from './base.ts';

// Recurring jobs. next_run_at is the next tick to make a job for; the scheduler advances it in
// the same transaction that enqueues the tick's job (idempotency key schedule:NAME:TICK_ISO).
export const schedules = herald.table(
  'schedules',
  {
    name: text('name').primaryKey(),
    cron: text('cron').notNull(),
    timezone: text('timezone').notNull().default('UTC'),
    job: jsonb('job').notNull(),
    paused: boolean('paused').notNull().default(false),
    nextRunAt: tstz('next_run_at'),
    lastRunAt: tstz('last_run_at'),
    lastJobId: bigint('last_job_id', { mode: 'bigint' }),
    createdAt: tstz('created_at').notNull().defaultNow(),
    updatedAt: tstz('updated_at').notNull().defaultNow(),
  },
  (t) => [
    check('schedules_name', validName(t.name)),
    index('schedules_due').on(t.nextRunAt).where(sql`NOT ${t.paused}`),
  ],
);
