-- The queue history's single cursor row; it starts at the beginning of the feed, so an
-- upgraded database gets history for the events it already holds.
INSERT INTO herald.stats_cursor (id) VALUES (1) ON CONFLICT DO NOTHING;
--> statement-breakpoint
-- Queue history keeps enqueue→start waits as log-scale histograms (bin b holds waits w with
-- floor(4 * log2(w + 1)) = b, about ±9% wide), so minutes add up into coarser buckets.
CREATE FUNCTION herald.add_bins(a int[], b int[]) RETURNS int[] LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT coalesce(array_agg(coalesce(a[i], 0) + coalesce(b[i], 0) ORDER BY i), '{}')
  FROM generate_series(1, greatest(coalesce(cardinality(a), 0), coalesce(cardinality(b), 0))) i
$$;
--> statement-breakpoint
CREATE AGGREGATE herald.sum_bins(int[]) (SFUNC = herald.add_bins, STYPE = int[], INITCOND = '{}');
