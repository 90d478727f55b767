CREATE SCHEMA "herald";
--> statement-breakpoint
CREATE TYPE "herald"."event_type" AS ENUM('enqueued', 'claimed', 'progress', 'succeeded', 'retry_scheduled', 'failed', 'cancel_requested', 'cancelled', 'lease_expired', 'released', 'retried');--> statement-breakpoint
CREATE TYPE "herald"."job_status" AS ENUM('queued', 'running', 'succeeded', 'failed', 'cancelled');--> statement-breakpoint
CREATE TABLE "herald"."job_events" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "herald"."job_events_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"job_id" bigint NOT NULL,
	"tx" "xid8" DEFAULT pg_current_xact_id() NOT NULL,
	"at" timestamp with time zone DEFAULT now() NOT NULL,
	"queue" text NOT NULL,
	"kind" text NOT NULL,
	"type" "herald"."event_type" NOT NULL,
	"status" "herald"."job_status" NOT NULL,
	"attempt" integer NOT NULL,
	"worker" text,
	"data" jsonb
);
--> statement-breakpoint
CREATE TABLE "herald"."jobs" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "herald"."jobs_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"queue" text DEFAULT 'default' NOT NULL,
	"kind" text NOT NULL,
	"payload" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"priority" smallint DEFAULT 0 NOT NULL,
	"status" "herald"."job_status" DEFAULT 'queued' NOT NULL,
	"attempt" integer DEFAULT 0 NOT NULL,
	"max_attempts" integer DEFAULT 5 NOT NULL,
	"available_at" timestamp with time zone DEFAULT now() NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"started_at" timestamp with time zone,
	"finished_at" timestamp with time zone,
	"locked_by" text,
	"lease_expires_at" timestamp with time zone,
	"owner_lock" integer,
	"requires" text[] DEFAULT '{}'::text[] NOT NULL,
	"idempotency_key" text,
	"progress" jsonb,
	"result" jsonb,
	"last_error" jsonb,
	"cancel_requested_at" timestamp with time zone,
	CONSTRAINT "jobs_queued_shape" CHECK ("herald"."jobs"."status" <> 'queued' OR ("herald"."jobs"."locked_by" IS NULL AND "herald"."jobs"."lease_expires_at" IS NULL AND "herald"."jobs"."owner_lock" IS NULL AND "herald"."jobs"."finished_at" IS NULL)),
	CONSTRAINT "jobs_running_shape" CHECK ("herald"."jobs"."status" <> 'running' OR ("herald"."jobs"."locked_by" IS NOT NULL AND "herald"."jobs"."lease_expires_at" IS NOT NULL AND "herald"."jobs"."started_at" IS NOT NULL AND "herald"."jobs"."finished_at" IS NULL)),
	CONSTRAINT "jobs_terminal_shape" CHECK ("herald"."jobs"."status" NOT IN ('succeeded', 'failed', 'cancelled') OR ("herald"."jobs"."finished_at" IS NOT NULL AND "herald"."jobs"."locked_by" IS NULL AND "herald"."jobs"."lease_expires_at" IS NULL AND "herald"."jobs"."owner_lock" IS NULL)),
	CONSTRAINT "jobs_queue_name" CHECK ("herald"."jobs"."queue" ~ '^[A-Za-z0-9_.:-]{1,128}$'),
	CONSTRAINT "jobs_kind_name" CHECK ("herald"."jobs"."kind" ~ '^[A-Za-z0-9_.:-]{1,128}$'),
	CONSTRAINT "jobs_max_attempts_range" CHECK ("herald"."jobs"."max_attempts" BETWEEN 1 AND 1000),
	CONSTRAINT "jobs_attempt_range" CHECK ("herald"."jobs"."attempt" BETWEEN 0 AND "herald"."jobs"."max_attempts"),
	CONSTRAINT "jobs_requires_count" CHECK (cardinality("herald"."jobs"."requires") <= 32),
	CONSTRAINT "jobs_idempotency_key_length" CHECK (length("herald"."jobs"."idempotency_key") BETWEEN 1 AND 255),
	CONSTRAINT "jobs_progress_shape" CHECK ("herald"."jobs"."progress" IS NULL OR (jsonb_typeof("herald"."jobs"."progress"->'percent') = 'number' AND ("herald"."jobs"."progress"->>'percent')::numeric BETWEEN 0 AND 100))
);
--> statement-breakpoint
CREATE INDEX "job_events_tx_id" ON "herald"."job_events" USING btree ("tx","id");--> statement-breakpoint
CREATE INDEX "job_events_job_id" ON "herald"."job_events" USING btree ("job_id","id");--> statement-breakpoint
CREATE INDEX "jobs_claim_order" ON "herald"."jobs" USING btree ("priority" DESC NULLS LAST,"available_at","created_at","id") WHERE "herald"."jobs"."status" = 'queued';--> statement-breakpoint
CREATE INDEX "jobs_lease_expiry" ON "herald"."jobs" USING btree ("lease_expires_at") WHERE "herald"."jobs"."status" = 'running';--> statement-breakpoint
CREATE INDEX "jobs_finished" ON "herald"."jobs" USING btree ("finished_at") WHERE "herald"."jobs"."status" IN ('succeeded', 'failed', 'cancelled');--> statement-breakpoint
CREATE INDEX "jobs_queue_id" ON "herald"."jobs" USING btree ("queue","id" DESC NULLS LAST);--> statement-breakpoint
CREATE UNIQUE INDEX "jobs_idempotency_key" ON "herald"."jobs" USING btree ("idempotency_key") WHERE "herald"."jobs"."idempotency_key" IS NOT NULL;