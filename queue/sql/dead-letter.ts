// Dead letters: the trigger (drizzle/0014_dead_letters.sql) copies a job that fails for good into
// its queue's dead-letter queue; a redrive sends copies back to the queue they came from.

/**
 * The bulk action `redrive` over the batch `b` (see search.ts): each dead-letter copy that waits
 * (queued) or failed again becomes a new job in its source queue, and the copy is cancelled with
 * last_error naming that job, so a second redrive of the same filter makes nothing twice. The new
 * ids are drawn first, so copy and new job can name each other in one statement. The copy's
 * status is re-checked on the locked row: one a worker took meanwhile is left alone.
 */
export const REDRIVE = `
  UPDATE herald.jobs d
  SET status = 'cancelled', finished_at = now(), cancel_requested_at = NULL,
      last_error = jsonb_build_object('message', 'redriven to queue ' || d.source_queue || ' as job ' || p.new_id,
                                      'reason', 'redriven', 'jobId', p.new_id::text)
  FROM (SELECT j.id, nextval(pg_get_serial_sequence('herald.jobs', 'id')) AS new_id
        FROM herald.jobs j JOIN batch b ON b.id = j.id
        WHERE j.dead_letter_of IS NOT NULL AND j.status IN ('queued', 'failed')) p
  WHERE d.id = p.id AND d.status IN ('queued', 'failed')
  RETURNING d.*, p.new_id
), redriven AS (
  INSERT INTO herald.jobs (id, queue, kind, payload, priority, max_attempts, requires, "group", tags, timeout_ms, trace)
  OVERRIDING SYSTEM VALUE
  SELECT a.new_id, a.source_queue, a.kind, a.payload, a.priority, a.max_attempts, a.requires, a."group", a.tags,
         a.timeout_ms, a.trace
  FROM acted a
  ORDER BY a.new_id
  RETURNING id`;
