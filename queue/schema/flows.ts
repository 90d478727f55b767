// Workflows: flows and the dependency edges between their jobs.
import { sql } from 'drizzle-orm';
import { bigint, check, index, integer, primaryKey, text } from 'drizzle-orm/pg-core';
import { FLOW_NAME_PATTERN, MAX_NAME_LENGTH } from '../defaults.ts';
import { herald, tstz } from './base.ts';

// A flow: jobs created together with dependencies between them. Its status is derived from its
// jobs (jobs_flow), never stored, so no completion has to lock a shared row to keep it.
export const flows = herald.table(
  'flows',
  {
    id: bigint('id', { mode: 'bigint' }).primaryKey().generatedAlwaysAsIdentity(),
    name: text('name'),
    createdAt: tstz('created_at').notNull().defaultNow(),
  },
  (t) => [
    check('flows_name', sql`length(${t.name}) <= ${sql.raw(String(MAX_NAME_LENGTH))} AND ${t.name} ~ ${sql.raw(`'${FLOW_NAME_PATTERN}'`)}`),
  ],
);

// One row per dependency: `child` waits for `parent`; `pos` is the parent's place in the child's
// dependsOn. A parent is always created before its child (a flow inserts its jobs in dependency
// order), so parent < child: the graph cannot hold a cycle, and locking by id follows the edges.
// No foreign keys, as for events (row-level RI triggers); the delete trigger drops a child's edges.
export const jobEdges = herald.table(
  'job_edges',
  {
    child: bigint('child', { mode: 'bigint' }).notNull(),
    parent: bigint('parent', { mode: 'bigint' }).notNull(),
    pos: integer('pos').notNull(),
  },
  (t) => [
    primaryKey({ name: 'job_edges_pkey', columns: [t.child, t.parent] }),
    index('job_edges_parent').on(t.parent),
    check('job_edges_order', sql`${t.parent} < ${t.child}`),
  ],
);
