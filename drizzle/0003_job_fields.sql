ALTER TYPE "herald"."event_type" ADD VALUE 'expired';--> statement-breakpoint
ALTER TABLE "herald"."jobs" ADD COLUMN "group" text;--> statement-breakpoint
ALTER TABLE "herald"."jobs" ADD COLUMN "tags" text[] DEFAULT '{}'::text[] NOT NULL;--> statement-breakpoint
ALTER TABLE "herald"."jobs" ADD COLUMN "timeout_ms" integer;--> statement-breakpoint
ALTER TABLE "herald"."jobs" ADD COLUMN "expire_at" timestamp with time zone;--> statement-breakpoint
CREATE INDEX "jobs_expiry" ON "herald"."jobs" USING btree ("expire_at") WHERE "herald"."jobs"."status" = 'queued' AND "herald"."jobs"."expire_at" IS NOT NULL;--> statement-breakpoint
ALTER TABLE "herald"."jobs" ADD CONSTRAINT "jobs_group_name" CHECK ("herald"."jobs"."group" ~ '^[A-Za-z0-9_.:-]{1,128}$');--> statement-breakpoint
ALTER TABLE "herald"."jobs" ADD CONSTRAINT "jobs_tags_names" CHECK (cardinality("herald"."jobs"."tags") <= 16 AND (cardinality("herald"."jobs"."tags") = 0 OR (array_to_string("herald"."jobs"."tags", ',') ~ '^[A-Za-z0-9_.:-]{1,128}(,[A-Za-z0-9_.:-]{1,128})*$' AND string_to_array(array_to_string("herald"."jobs"."tags", ','), ',') = "herald"."jobs"."tags")));--> statement-breakpoint
ALTER TABLE "herald"."jobs" ADD CONSTRAINT "jobs_timeout_range" CHECK ("herald"."jobs"."timeout_ms" BETWEEN 1 AND 86400000);