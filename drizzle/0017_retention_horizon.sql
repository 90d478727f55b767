ALTER TYPE "herald"."event_type" ADD VALUE 'deleted';--> statement-breakpoint
CREATE TABLE "herald"."deleted_jobs" (
	"job_id" bigint PRIMARY KEY NOT NULL,
	"deleted_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "herald"."retention_horizon" (
	"id" smallint PRIMARY KEY DEFAULT 1 NOT NULL,
	"tx" "xid8" DEFAULT '0'::xid8 NOT NULL,
	"event_id" bigint DEFAULT 0 NOT NULL,
	CONSTRAINT "retention_horizon_one_row" CHECK ("herald"."retention_horizon"."id" = 1)
);
--> statement-breakpoint
CREATE INDEX "deleted_jobs_at" ON "herald"."deleted_jobs" USING btree ("deleted_at");
--> statement-breakpoint
INSERT INTO "herald"."retention_horizon" DEFAULT VALUES;
