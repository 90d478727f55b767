-- Events carry two indexes instead of three: the key becomes the feed's order (tx, id), which
-- the (tx, id) index served before, and a job's timeline is found by job_id alone. Every event
-- wrote all three; the old key on id alone was read by nothing.
ALTER TABLE "herald"."job_events" DROP CONSTRAINT "job_events_pkey";--> statement-breakpoint
ALTER TABLE "herald"."job_events" ADD CONSTRAINT "job_events_pkey" PRIMARY KEY("tx","id");--> statement-breakpoint
DROP INDEX "herald"."job_events_tx_id";--> statement-breakpoint
DROP INDEX "herald"."job_events_job_id";--> statement-breakpoint
CREATE INDEX "job_events_job" ON "herald"."job_events" USING btree ("job_id");
