CREATE TABLE "herald"."queue_gate" (
	"id" smallint PRIMARY KEY DEFAULT 1 NOT NULL,
	"held" text[] DEFAULT '{}'::text[] NOT NULL,
	CONSTRAINT "queue_gate_one_row" CHECK ("herald"."queue_gate"."id" = 1)
);
--> statement-breakpoint
CREATE TABLE "herald"."queue_starts" (
	"queue" text NOT NULL,
	"at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "herald"."queues" (
	"queue" text PRIMARY KEY NOT NULL,
	"paused" boolean DEFAULT false NOT NULL,
	"concurrency" integer,
	"group_concurrency" integer,
	"rate_count" integer,
	"rate_period_ms" integer,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "queues_queue_name" CHECK ("herald"."queues"."queue" ~ '^[A-Za-z0-9_.:-]{1,128}$'),
	CONSTRAINT "queues_concurrency_range" CHECK ("herald"."queues"."concurrency" BETWEEN 1 AND 10000),
	CONSTRAINT "queues_group_concurrency_range" CHECK ("herald"."queues"."group_concurrency" BETWEEN 1 AND 10000),
	CONSTRAINT "queues_rate_count_range" CHECK ("herald"."queues"."rate_count" BETWEEN 1 AND 100000),
	CONSTRAINT "queues_rate_period_range" CHECK ("herald"."queues"."rate_period_ms" BETWEEN 100 AND 86400000),
	CONSTRAINT "queues_rate_both" CHECK (("herald"."queues"."rate_count" IS NULL) = ("herald"."queues"."rate_period_ms" IS NULL))
);
--> statement-breakpoint
CREATE TABLE "herald"."schedules" (
	"name" text PRIMARY KEY NOT NULL,
	"cron" text NOT NULL,
	"timezone" text DEFAULT 'UTC' NOT NULL,
	"job" jsonb NOT NULL,
	"paused" boolean DEFAULT false NOT NULL,
	"next_run_at" timestamp with time zone,
	"last_run_at" timestamp with time zone,
	"last_job_id" bigint,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "schedules_name" CHECK ("herald"."schedules"."name" ~ '^[A-Za-z0-9_.:-]{1,128}$')
);
--> statement-breakpoint
CREATE TABLE "herald"."workers" (
	"id" text PRIMARY KEY NOT NULL,
	"host" text NOT NULL,
	"pid" integer NOT NULL,
	"queues" text[],
	"kinds" text[] NOT NULL,
	"capabilities" text[] NOT NULL,
	"concurrency" integer NOT NULL,
	"lock_key" integer,
	"started_at" timestamp with time zone DEFAULT now() NOT NULL,
	"last_seen_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE INDEX "queue_starts_queue_at" ON "herald"."queue_starts" USING btree ("queue","at");--> statement-breakpoint
CREATE INDEX "schedules_due" ON "herald"."schedules" USING btree ("next_run_at") WHERE NOT "herald"."schedules"."paused";--> statement-breakpoint
CREATE INDEX "jobs_running_queue" ON "herald"."jobs" USING btree ("queue","group") WHERE "herald"."jobs"."status" = 'running';