ALTER TYPE "herald"."event_type" ADD VALUE 'unblocked';--> statement-breakpoint
ALTER TYPE "herald"."job_status" ADD VALUE 'blocked';--> statement-breakpoint
CREATE TABLE "herald"."flows" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "herald"."flows_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"name" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "flows_name" CHECK ("herald"."flows"."name" ~ '^[A-Za-z0-9_.:-]{1,128}$')
);
--> statement-breakpoint
CREATE TABLE "herald"."job_edges" (
	"child" bigint NOT NULL,
	"parent" bigint NOT NULL,
	"pos" integer NOT NULL,
	CONSTRAINT "job_edges_pkey" PRIMARY KEY("child","parent"),
	CONSTRAINT "job_edges_order" CHECK ("herald"."job_edges"."parent" < "herald"."job_edges"."child")
);
--> statement-breakpoint
ALTER TABLE "herald"."job_events" ADD COLUMN "flow_id" bigint;--> statement-breakpoint
ALTER TABLE "herald"."jobs" ADD COLUMN "flow_id" bigint;--> statement-breakpoint
ALTER TABLE "herald"."jobs" ADD COLUMN "ref" text;--> statement-breakpoint
ALTER TABLE "herald"."jobs" ADD COLUMN "on_parent_failure" text;--> statement-breakpoint
ALTER TABLE "herald"."jobs" ADD COLUMN "has_children" boolean;--> statement-breakpoint
CREATE INDEX "job_edges_parent" ON "herald"."job_edges" USING btree ("parent");--> statement-breakpoint
CREATE INDEX "jobs_flow" ON "herald"."jobs" USING btree ("flow_id","status") WHERE "herald"."jobs"."flow_id" IS NOT NULL;--> statement-breakpoint
ALTER TABLE "herald"."jobs" ADD CONSTRAINT "jobs_blocked_shape" CHECK ("herald"."jobs"."status"::text <> 'blocked' OR ("herald"."jobs"."locked_by" IS NULL AND "herald"."jobs"."lease_expires_at" IS NULL AND "herald"."jobs"."owner_lock" IS NULL AND "herald"."jobs"."finished_at" IS NULL));--> statement-breakpoint
ALTER TABLE "herald"."jobs" ADD CONSTRAINT "jobs_ref_name" CHECK ("herald"."jobs"."ref" ~ '^[A-Za-z0-9_.:-]{1,128}$');--> statement-breakpoint
ALTER TABLE "herald"."jobs" ADD CONSTRAINT "jobs_on_parent_failure" CHECK ("herald"."jobs"."on_parent_failure" IN ('cancel', 'run'));