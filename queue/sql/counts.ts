import { statement } from './statement.ts';

/**
 * Folds herald.job_counts: every session's stripe into stripe 0, and the queued minutes already
 * past into -infinity (no job of theirs can be scheduled any more). One statement: a row is
 * deleted and its n added to stripe 0 together. Rows a writer holds (its transaction is still
 * open) are skipped, not waited for, and folded next time; so the pass never waits on a worker,
 * and no worker's delta is lost. Only this pass writes stripe 0.
 */
export const foldJobCounts = statement<[], { folded: number }>(
  'fold_job_counts',
  `
WITH cur AS (SELECT herald.job_count_minute('queued', now()) AS minute),
moved AS (
  DELETE FROM herald.job_counts c
  WHERE (c.queue, c.status, c.minute, c.stripe) IN (
    SELECT k.queue, k.status, k.minute, k.stripe FROM herald.job_counts k CROSS JOIN cur
    WHERE k.stripe <> 0 OR (k.minute > '-infinity' AND k.minute < cur.minute)
    FOR UPDATE OF k SKIP LOCKED)
  RETURNING c.queue, c.status, c.minute, c.n
),
folded AS (
  INSERT INTO herald.job_counts AS c (queue, status, minute, stripe, n)
  SELECT m.queue, m.status, CASE WHEN m.minute < cur.minute THEN '-infinity'::timestamptz ELSE m.minute END, 0, sum(m.n)
  FROM moved m CROSS JOIN cur
  GROUP BY 1, 2, 3
  ORDER BY 1, 2, 3
  ON CONFLICT (queue, status, minute, stripe) DO UPDATE SET n = c.n + excluded.n
)
SELECT count(*)::int AS folded FROM moved`,
);

/** Drops the rows of stripe 0 that count nothing (a queue emptied, a minute fully claimed). */
export const dropEmptyJobCounts = statement<[]>('drop_empty_job_counts', `DELETE FROM herald.job_counts WHERE stripe = 0 AND n = 0`);
