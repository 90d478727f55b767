-- The enqueued event carries the job's attempts limit, so a row the board builds from the stream
-- shows "1/3" as a reload does, not a bare "1". Same body as before, with maxAttempts added.
CREATE OR REPLACE FUNCTION herald.jobs_after_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO herald.job_events (job_id, queue, kind, type, status, attempt, worker, data)
  SELECT n.id, n.queue, n.kind, 'enqueued', n.status, n.attempt, NULL,
         jsonb_build_object('priority', n.priority, 'runAt', herald.iso_utc(n.available_at), 'maxAttempts', n.max_attempts)
  FROM new_jobs n
  ORDER BY n.id;

  PERFORM pg_notify('herald_jobs',
            CASE WHEN q.runnable THEN q.queue
                 ELSE q.queue || ' ' || ceil(extract(epoch FROM q.next_at) * 1000)::bigint END)
  FROM (SELECT n.queue,
               bool_or(n.available_at <= now()) AS runnable,
               min(n.available_at) AS next_at
        FROM new_jobs n
        WHERE n.status = 'queued'
        GROUP BY n.queue) q;
  RETURN NULL;
END $$;
