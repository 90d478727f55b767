CREATE TABLE "herald"."queue_stats" (
	"queue" text NOT NULL,
	"at" timestamp with time zone NOT NULL,
	"enqueued" integer DEFAULT 0 NOT NULL,
	"started" integer DEFAULT 0 NOT NULL,
	"succeeded" integer DEFAULT 0 NOT NULL,
	"failed" integer DEFAULT 0 NOT NULL,
	"wait_hist" integer[] DEFAULT '{}'::int[] NOT NULL,
	"depth" integer,
	CONSTRAINT "queue_stats_queue_at_pk" PRIMARY KEY("queue","at")
);
--> statement-breakpoint
CREATE TABLE "herald"."stats_cursor" (
	"id" smallint PRIMARY KEY DEFAULT 1 NOT NULL,
	"tx" "xid8" DEFAULT '0'::xid8 NOT NULL,
	"event_id" bigint DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE INDEX "queue_stats_at" ON "herald"."queue_stats" USING btree ("at");