import type { FeedAfter } from './rows.ts';
import { statement } from './statement.ts';

// Rows the feed cannot hand out yet: committed (visible to this statement, so their
// transaction ended) but at or above the horizon, because an older transaction is still open.
// The server's tailer asks (Queue.heldBack) after a short page: if some are held back it re-reads in a few ms
// instead of waiting for the next tick or its safety timer (a latency aid, never a correctness one).
export const feedHeldBack = statement<FeedAfter, { held: boolean }>(
  'feed_held_back',
  `
SELECT EXISTS (
  SELECT 1 FROM herald.job_events e
  WHERE (e.tx, e.id) > ($1::xid8, $2::bigint)
    AND e.tx >= pg_snapshot_xmin(pg_current_snapshot())
) AS held`,
);
