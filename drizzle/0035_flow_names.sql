-- A flow's name is text a person writes ("order 42"): spaces and any printable character, 1-128 of
-- them, not starting or ending with a space. Every name the old check took passes the new one.
ALTER TABLE "herald"."flows" DROP CONSTRAINT "flows_name";--> statement-breakpoint
ALTER TABLE "herald"."flows" ADD CONSTRAINT "flows_name" CHECK (length("herald"."flows"."name") <= 128 AND "herald"."flows"."name" ~ '^[^ \x00-\x1f\x7f]([^\x00-\x1f\x7f]*[^ \x00-\x1f\x7f])?$');