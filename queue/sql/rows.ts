// Rows as node-postgres returns them: keyed by SQL column name, int8 as a string, timestamptz
// as a Date, jsonb parsed. Derived from the drizzle tables (queue/schema/), so a column is
// declared once; shared by the statements that return whole rows.
import type { Table } from 'drizzle-orm';
import type { jobEvents, jobs } from '../schema/index.ts';
import type { WaitingFor } from './waiting.ts';

/** node-postgres keeps int8 as a string (its 64 bits do not fit a JS number). */
type Pg<T> = T extends bigint ? string : T;

/** A row of table T as node-postgres returns it (`SELECT *` / `RETURNING *`). */
export type PgRow<T extends Table> = {
  [K in keyof T['_']['columns'] as T['_']['columns'][K]['_']['name']]: Pg<T['$inferSelect'][K & keyof T['$inferSelect']]>;
};

/**
 * A row of herald.jobs; `waiting_for` only from statements that compute why a queued job waits,
 * `depends_on` (the parents, in dependsOn order) only from statements that return jobs to the API.
 */
export type JobRow = PgRow<typeof jobs> & { waiting_for?: WaitingFor | null; depends_on?: string[] };

/** A row of herald.job_events as the feed reads it (tx as text: xid8 has no JS type). */
export type EventRow = PgRow<typeof jobEvents>;

/** The feed position a statement reads after: (tx, id). */
export type FeedAfter = [afterTx: string, afterId: string];

/** The newest event against a cursor and a horizon (feed-backlog.ts): past the cursor, and at or above the horizon. */
export interface BacklogRow {
  past: boolean;
  held: boolean;
}
