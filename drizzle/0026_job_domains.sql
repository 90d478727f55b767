-- Each rule of herald.jobs that reads one column alone moves from a table CHECK to a domain,
-- herald.job_<column>, whose CHECK keeps the old constraint's name (the error a writer sees names
-- it as before). PostgreSQL parses and plans every CHECK of a table again for each statement that
-- writes a row: about 120 µs for a one-job INSERT with all eleven, more than the rest of the
-- statement. A domain's check is prepared once per session, and an UPDATE tests it only on the
-- columns it sets, which claims and completions never do. The row-shape checks span columns and
-- stay table checks. The rules are the same as before.
--
-- Done so that the table is not rewritten: the domains are made bare, so the type change is
-- binary-compatible (no rewrite, indexes kept), then the rules are added, which reads the table
-- once to validate. The old checks go first so that no step tests them again.
CREATE DOMAIN "herald"."job_queue" AS text;
--> statement-breakpoint
CREATE DOMAIN "herald"."job_kind" AS text;
--> statement-breakpoint
CREATE DOMAIN "herald"."job_group" AS text;
--> statement-breakpoint
CREATE DOMAIN "herald"."job_ref" AS text;
--> statement-breakpoint
CREATE DOMAIN "herald"."job_tags" AS text[];
--> statement-breakpoint
CREATE DOMAIN "herald"."job_requires" AS text[];
--> statement-breakpoint
CREATE DOMAIN "herald"."job_max_attempts" AS integer;
--> statement-breakpoint
CREATE DOMAIN "herald"."job_timeout_ms" AS integer;
--> statement-breakpoint
CREATE DOMAIN "herald"."job_idempotency_key" AS text;
--> statement-breakpoint
CREATE DOMAIN "herald"."job_on_parent_failure" AS text;
--> statement-breakpoint
CREATE DOMAIN "herald"."job_progress" AS jsonb;
--> statement-breakpoint
ALTER TABLE "herald"."jobs"
  DROP CONSTRAINT "jobs_ref_name",
  DROP CONSTRAINT "jobs_on_parent_failure",
  DROP CONSTRAINT "jobs_queue_name",
  DROP CONSTRAINT "jobs_kind_name",
  DROP CONSTRAINT "jobs_max_attempts_range",
  DROP CONSTRAINT "jobs_requires_count",
  DROP CONSTRAINT "jobs_group_name",
  DROP CONSTRAINT "jobs_tags_names",
  DROP CONSTRAINT "jobs_timeout_range",
  DROP CONSTRAINT "jobs_idempotency_key_length",
  DROP CONSTRAINT "jobs_progress_shape",
  ALTER COLUMN "queue" SET DATA TYPE "herald"."job_queue",
  ALTER COLUMN "kind" SET DATA TYPE "herald"."job_kind",
  ALTER COLUMN "group" SET DATA TYPE "herald"."job_group",
  ALTER COLUMN "ref" SET DATA TYPE "herald"."job_ref",
  ALTER COLUMN "tags" SET DATA TYPE "herald"."job_tags",
  ALTER COLUMN "requires" SET DATA TYPE "herald"."job_requires",
  ALTER COLUMN "max_attempts" SET DATA TYPE "herald"."job_max_attempts",
  ALTER COLUMN "timeout_ms" SET DATA TYPE "herald"."job_timeout_ms",
  ALTER COLUMN "idempotency_key" SET DATA TYPE "herald"."job_idempotency_key",
  ALTER COLUMN "on_parent_failure" SET DATA TYPE "herald"."job_on_parent_failure",
  ALTER COLUMN "progress" SET DATA TYPE "herald"."job_progress";
--> statement-breakpoint
ALTER DOMAIN "herald"."job_queue" ADD CONSTRAINT "jobs_queue_name" CHECK (length(VALUE) <= 128 AND VALUE ~ '^[A-Za-z0-9_.:-]+$');
--> statement-breakpoint
ALTER DOMAIN "herald"."job_kind" ADD CONSTRAINT "jobs_kind_name" CHECK (length(VALUE) <= 128 AND VALUE ~ '^[A-Za-z0-9_.:-]+$');
--> statement-breakpoint
ALTER DOMAIN "herald"."job_group" ADD CONSTRAINT "jobs_group_name" CHECK (length(VALUE) <= 128 AND VALUE ~ '^[A-Za-z0-9_.:-]+$');
--> statement-breakpoint
ALTER DOMAIN "herald"."job_ref" ADD CONSTRAINT "jobs_ref_name" CHECK (length(VALUE) <= 128 AND VALUE ~ '^[A-Za-z0-9_.:-]+$');
--> statement-breakpoint
ALTER DOMAIN "herald"."job_tags" ADD CONSTRAINT "jobs_tags_names" CHECK (cardinality(VALUE) <= 16 AND (cardinality(VALUE) = 0 OR (array_to_string(VALUE, ',') ~ '^[A-Za-z0-9_.:-]+(,[A-Za-z0-9_.:-]+)*$' AND array_to_string(VALUE, ',') !~ '[^,]{129}' AND string_to_array(array_to_string(VALUE, ','), ',') = VALUE)));
--> statement-breakpoint
ALTER DOMAIN "herald"."job_requires" ADD CONSTRAINT "jobs_requires_count" CHECK (cardinality(VALUE) <= 32);
--> statement-breakpoint
ALTER DOMAIN "herald"."job_max_attempts" ADD CONSTRAINT "jobs_max_attempts_range" CHECK (VALUE BETWEEN 1 AND 1000);
--> statement-breakpoint
ALTER DOMAIN "herald"."job_timeout_ms" ADD CONSTRAINT "jobs_timeout_range" CHECK (VALUE BETWEEN 1 AND 86400000);
--> statement-breakpoint
ALTER DOMAIN "herald"."job_idempotency_key" ADD CONSTRAINT "jobs_idempotency_key_length" CHECK (length(VALUE) BETWEEN 1 AND 255);
--> statement-breakpoint
ALTER DOMAIN "herald"."job_on_parent_failure" ADD CONSTRAINT "jobs_on_parent_failure" CHECK (VALUE IN ('cancel', 'run'));
--> statement-breakpoint
ALTER DOMAIN "herald"."job_progress" ADD CONSTRAINT "jobs_progress_shape" CHECK (VALUE IS NULL OR (jsonb_typeof(VALUE->'percent') = 'number' AND (VALUE->>'percent')::numeric BETWEEN 0 AND 100));
