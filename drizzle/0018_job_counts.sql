-- Job counts kept by triggers (herald.job_counts), and the indexes that bound a listing by status or
-- kind. The table and indexes are drizzle's; the rest is hand-written. No writer of herald.jobs may
-- slip between the backfill and the triggers: the lock keeps them out until this transaction ends.
LOCK TABLE "herald"."jobs" IN SHARE ROW EXCLUSIVE MODE;--> statement-breakpoint
CREATE TABLE "herald"."job_counts" (
	"queue" text NOT NULL,
	"status" "herald"."job_status" NOT NULL,
	"minute" timestamp with time zone NOT NULL,
	"stripe" smallint NOT NULL,
	"n" bigint NOT NULL,
	CONSTRAINT "job_counts_pkey" PRIMARY KEY("queue","status","minute","stripe")
);
--> statement-breakpoint
CREATE INDEX "jobs_status_queue" ON "herald"."jobs" USING btree ("status","queue","id" DESC NULLS LAST) WHERE "herald"."jobs"."status" NOT IN ('queued', 'running');--> statement-breakpoint
CREATE INDEX "jobs_kind_queue" ON "herald"."jobs" USING btree ("kind","queue","id" DESC NULLS LAST);
--> statement-breakpoint
-- The minute of a queued job's available_at (its own value when infinite); -infinity for every
-- other status. Immutable operators only, so the planner inlines it into the triggers.
CREATE FUNCTION herald.job_count_minute(status herald.job_status, available_at timestamptz) RETURNS timestamptz
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE WHEN status <> 'queued' THEN '-infinity'::timestamptz
            WHEN isfinite(available_at) THEN date_bin('1 minute', available_at, '2000-01-01 00:00:00+00')
            ELSE available_at END;
--> statement-breakpoint
-- Each statement on jobs adds its net change per (queue, status, minute) to the writing session's
-- stripe (1-16; stripe 0 is the maintenance pass's), in key order, so two sessions rarely wait on
-- one row and never lock two rows in opposite orders within a statement. A statement that moves no
-- job between counts (a heartbeat, a progress report) writes nothing.
-- Insert and delete: every row of the statement (named `changed_jobs` by both triggers) counts +1
-- or -1.
CREATE FUNCTION herald.jobs_counts_after_insert_or_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO herald.job_counts AS c (queue, status, minute, stripe, n)
  SELECT j.queue, j.status, herald.job_count_minute(j.status, j.available_at), 1 + pg_backend_pid() % 16,
         CASE TG_OP WHEN 'DELETE' THEN -count(*) ELSE count(*) END
  FROM changed_jobs j
  GROUP BY 1, 2, 3
  ORDER BY 1, 2, 3
  ON CONFLICT (queue, status, minute, stripe) DO UPDATE SET n = c.n + excluded.n;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE FUNCTION herald.jobs_counts_after_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO herald.job_counts AS c (queue, status, minute, stripe, n)
  SELECT d.queue, d.status, d.minute, 1 + pg_backend_pid() % 16, sum(d.n)
  FROM (SELECT o.queue, o.status, herald.job_count_minute(o.status, o.available_at) AS minute, -1 AS n FROM old_jobs o
        UNION ALL
        SELECT n.queue, n.status, herald.job_count_minute(n.status, n.available_at), 1 FROM new_jobs n) d
  GROUP BY 1, 2, 3
  HAVING sum(d.n) <> 0
  ORDER BY 1, 2, 3
  ON CONFLICT (queue, status, minute, stripe) DO UPDATE SET n = c.n + excluded.n;
  RETURN NULL;
END $$;
--> statement-breakpoint
-- TRUNCATE holds jobs exclusively: no other writer has an uncommitted count.
CREATE FUNCTION herald.jobs_counts_after_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM herald.job_counts;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER jobs_counts_after_insert AFTER INSERT ON herald.jobs
  REFERENCING NEW TABLE AS changed_jobs FOR EACH STATEMENT EXECUTE FUNCTION herald.jobs_counts_after_insert_or_delete();
--> statement-breakpoint
CREATE TRIGGER jobs_counts_after_update AFTER UPDATE ON herald.jobs
  REFERENCING OLD TABLE AS old_jobs NEW TABLE AS new_jobs FOR EACH STATEMENT EXECUTE FUNCTION herald.jobs_counts_after_update();
--> statement-breakpoint
CREATE TRIGGER jobs_counts_after_delete AFTER DELETE ON herald.jobs
  REFERENCING OLD TABLE AS changed_jobs FOR EACH STATEMENT EXECUTE FUNCTION herald.jobs_counts_after_insert_or_delete();
--> statement-breakpoint
CREATE TRIGGER jobs_counts_after_truncate AFTER TRUNCATE ON herald.jobs
  FOR EACH STATEMENT EXECUTE FUNCTION herald.jobs_counts_after_truncate();
--> statement-breakpoint
-- The counts of the jobs already there (minutes already past folded into -infinity, as the
-- maintenance pass leaves them), under the lock taken above.
INSERT INTO herald.job_counts (queue, status, minute, stripe, n)
SELECT j.queue, j.status, CASE WHEN m.minute < herald.job_count_minute('queued', now()) THEN '-infinity'::timestamptz ELSE m.minute END, 0, count(*)
FROM herald.jobs j CROSS JOIN LATERAL (SELECT herald.job_count_minute(j.status, j.available_at) AS minute) m
GROUP BY 1, 2, 3;
--> statement-breakpoint
-- A small table rewritten all day: vacuum it often, and leave room for its updates on each page.
ALTER TABLE herald.job_counts SET (fillfactor = 50, autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000, autovacuum_vacuum_cost_delay = 0);
