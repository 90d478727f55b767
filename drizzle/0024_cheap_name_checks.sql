-- The name checks test the length apart from the characters: PostgreSQL evaluates every CHECK on
-- every UPDATE of a row (each claim and completion of a job), and the bounded repetition
-- [...]{1,128} made each name test walk 128 regex states, about 3 µs a name (24 µs for a job's
-- tags) against 0.4 µs now. The rule is the same. One ALTER TABLE per table, so each table is
-- read once to validate the new checks.
ALTER TABLE "herald"."flows"
  DROP CONSTRAINT "flows_name",
  ADD CONSTRAINT "flows_name" CHECK (length("herald"."flows"."name") <= 128 AND "herald"."flows"."name" ~ '^[A-Za-z0-9_.:-]+$');
--> statement-breakpoint
ALTER TABLE "herald"."jobs"
  DROP CONSTRAINT "jobs_ref_name",
  DROP CONSTRAINT "jobs_queue_name",
  DROP CONSTRAINT "jobs_kind_name",
  DROP CONSTRAINT "jobs_group_name",
  DROP CONSTRAINT "jobs_tags_names",
  ADD CONSTRAINT "jobs_ref_name" CHECK (length("herald"."jobs"."ref") <= 128 AND "herald"."jobs"."ref" ~ '^[A-Za-z0-9_.:-]+$'),
  ADD CONSTRAINT "jobs_queue_name" CHECK (length("herald"."jobs"."queue") <= 128 AND "herald"."jobs"."queue" ~ '^[A-Za-z0-9_.:-]+$'),
  ADD CONSTRAINT "jobs_kind_name" CHECK (length("herald"."jobs"."kind") <= 128 AND "herald"."jobs"."kind" ~ '^[A-Za-z0-9_.:-]+$'),
  ADD CONSTRAINT "jobs_group_name" CHECK (length("herald"."jobs"."group") <= 128 AND "herald"."jobs"."group" ~ '^[A-Za-z0-9_.:-]+$'),
  ADD CONSTRAINT "jobs_tags_names" CHECK (cardinality("herald"."jobs"."tags") <= 16 AND (cardinality("herald"."jobs"."tags") = 0 OR (array_to_string("herald"."jobs"."tags", ',') ~ '^[A-Za-z0-9_.:-]+(,[A-Za-z0-9_.:-]+)*$' AND array_to_string("herald"."jobs"."tags", ',') !~ '[^,]{129}' AND string_to_array(array_to_string("herald"."jobs"."tags", ','), ',') = "herald"."jobs"."tags")));
--> statement-breakpoint
ALTER TABLE "herald"."queues"
  DROP CONSTRAINT "queues_queue_name",
  DROP CONSTRAINT "queues_dead_letter_name",
  ADD CONSTRAINT "queues_queue_name" CHECK (length("herald"."queues"."queue") <= 128 AND "herald"."queues"."queue" ~ '^[A-Za-z0-9_.:-]+$'),
  ADD CONSTRAINT "queues_dead_letter_name" CHECK (length("herald"."queues"."dead_letter") <= 128 AND "herald"."queues"."dead_letter" ~ '^[A-Za-z0-9_.:-]+$' AND "herald"."queues"."dead_letter" <> "herald"."queues"."queue");
--> statement-breakpoint
ALTER TABLE "herald"."schedules"
  DROP CONSTRAINT "schedules_name",
  ADD CONSTRAINT "schedules_name" CHECK (length("herald"."schedules"."name") <= 128 AND "herald"."schedules"."name" ~ '^[A-Za-z0-9_.:-]+$');
