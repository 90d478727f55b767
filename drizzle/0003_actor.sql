-- Who did a manual action (cancel, retry, bulk): the server sets herald.actor for the
-- transaction (set_config(..., true)) to a JSON object such as {"role":"admin","label":"alice"},
-- and every event written in that transaction carries it as data.by. A row trigger, but its
-- WHEN clause keeps it out of the hot path: workers never set the actor, so for them the
-- trigger function is never called.
CREATE FUNCTION herald.job_events_actor() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.data := coalesce(NEW.data, '{}'::jsonb)
              || jsonb_build_object('by', current_setting('herald.actor', true)::jsonb);
  RETURN NEW;
END $$;
--> statement-breakpoint
CREATE TRIGGER job_events_actor BEFORE INSERT ON herald.job_events
  FOR EACH ROW WHEN (coalesce(current_setting('herald.actor', true), '') <> '')
  EXECUTE FUNCTION herald.job_events_actor();
--> statement-breakpoint
-- The queue history's single cursor row; it starts at the beginning of the feed, so an
-- upgraded database gets history for the events it already holds.
INSERT INTO herald.stats_cursor (id) VALUES (1) ON CONFLICT DO NOTHING;
