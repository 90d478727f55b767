// Dead letters: the trigger (drizzle/0014_dead_letters.sql, replacing older copies since 0028)
// copies a job that fails for good into its queue's dead-letter queue; a redrive sends copies back
// to the queue they came from.
import { MAX_ATTEMPTS_LIMIT } from '../defaults.ts';
import { RETRY } from './admin.ts';

/**
 * A dead-letter copy `c` a redrive would send back, given its source's status `source` (null when
 * retention or a delete removed the source): waiting or failed, the newest copy of its source
 * (an older one was replaced), and its source not since succeeded, waiting or running again.
 * So a piece of work that failed for good twice is redriven once, and one that succeeded on a
 * retry not at all. (A source in a flow is retried in place: it also needs an attempt left.)
 */
export const redrivable = (c: string, source: string) => `${c}.dead_letter_of IS NOT NULL AND ${c}.status IN ('queued', 'failed')
    AND NOT EXISTS (SELECT 1 FROM herald.jobs n WHERE n.dead_letter_of = ${c}.dead_letter_of AND n.id > ${c}.id)
    AND (${source}.status IS NULL OR (${source}.status IN ('failed', 'cancelled')
         AND (${source}.flow_id IS NULL OR ${source}.attempt < ${MAX_ATTEMPTS_LIMIT})))`;

/**
 * The bulk action `redrive` over the batch `b` (see search.ts): each redrivable copy sends its
 * work back, and the copy is cancelled with last_error naming the job that runs it, so a second
 * redrive of the same filter makes nothing twice. The work goes back as a new job in the source
 * queue, except when the source is a job of a flow: that job itself is retried in place (as a
 * retry does), so that it stays in its flow, its children wait for it again, and a later flow
 * retry finds it done rather than running it once more. The new ids are drawn first, so copy and
 * new job can name each other in one statement.
 *
 * The sources are read FOR SHARE: a retry of a source that is in flight when the redrive comes
 * makes it wait, and the redrive then reads the source as that retry left it (queued: skipped).
 * Read without the lock, the redrive would act on the old snapshot's 'failed' and run the work a
 * second time beside the retry. The copy's status is re-checked on its locked row: one a worker
 * took meanwhile is left alone.
 */
export const REDRIVE = `
  UPDATE herald.jobs d
  SET status = 'cancelled', finished_at = now(), cancel_requested_at = NULL,
      last_error = jsonb_build_object('message', 'redriven to queue ' || d.source_queue || ' as job ' || p.new_id,
                                      'reason', 'redriven', 'jobId', p.new_id::text)
  FROM (SELECT j.id, CASE WHEN s.flow_id IS NULL THEN nextval(pg_get_serial_sequence('herald.jobs', 'id')) ELSE s.id END AS new_id,
               s.flow_id IS NOT NULL AS in_place
        FROM herald.jobs j JOIN batch b ON b.id = j.id
        LEFT JOIN (SELECT s.id, s.status, s.flow_id, s.attempt FROM herald.jobs s
                   WHERE s.id IN (SELECT c.dead_letter_of FROM herald.jobs c JOIN batch cb ON cb.id = c.id)
                   ORDER BY s.id
                   FOR SHARE) s ON s.id = j.dead_letter_of
        WHERE ${redrivable('j', 's')}) p
  WHERE d.id = p.id AND d.status IN ('queued', 'failed')
  RETURNING d.*, p.new_id, p.in_place
), redriven AS (
  INSERT INTO herald.jobs (id, queue, kind, payload, priority, max_attempts, requires, "group", tags, timeout_ms, trace)
  OVERRIDING SYSTEM VALUE
  SELECT a.new_id, a.source_queue, a.kind, a.payload, a.priority, a.max_attempts, a.requires, a."group", a.tags,
         a.timeout_ms, a.trace
  FROM acted a
  WHERE NOT a.in_place
  ORDER BY a.new_id
  RETURNING id
), rerun AS (
  UPDATE herald.jobs SET ${RETRY.set}
  FROM (SELECT a.new_id FROM acted a WHERE a.in_place) r
  WHERE herald.jobs.id = r.new_id AND ${RETRY.where}
  RETURNING 1`;
