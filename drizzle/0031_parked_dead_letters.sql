ALTER TABLE "herald"."queue_gate" ADD COLUMN "parked" text[] DEFAULT '{}'::text[] NOT NULL;--> statement-breakpoint
-- Hand-written: the gate row also lists the dead-letter queues (parked), which a claim for every
-- queue leaves alone. Rebuilt as 0012 rebuilds held: after the gate row's lock, in a new statement.
CREATE OR REPLACE FUNCTION herald.queues_after_change() RETURNS trigger LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  PERFORM 1 FROM herald.queue_gate WHERE id = 1 FOR UPDATE;
  UPDATE herald.queue_gate
  SET held = coalesce((SELECT array_agg(queue ORDER BY queue) FROM herald.queues
                       WHERE paused OR concurrency IS NOT NULL OR group_concurrency IS NOT NULL
                          OR rate_count IS NOT NULL), '{}'),
      parked = coalesce((SELECT array_agg(DISTINCT dead_letter ORDER BY dead_letter) FROM herald.queues
                         WHERE dead_letter IS NOT NULL), '{}')
  WHERE id = 1;
  PERFORM pg_notify('herald_control', 'queues');
  RETURN NULL;
END $$;
--> statement-breakpoint
UPDATE herald.queue_gate
SET parked = coalesce((SELECT array_agg(DISTINCT dead_letter ORDER BY dead_letter) FROM herald.queues
                       WHERE dead_letter IS NOT NULL), '{}')
WHERE id = 1;
