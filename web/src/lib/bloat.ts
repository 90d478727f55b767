// When the Health page colours a table's dead rows red. Autovacuum's default trigger is 50 dead
// rows plus 20% of the live ones, and it looks at most once a minute: a small table shows a large
// dead share between two runs, and scanning a few thousand dead rows costs nothing. So red means
// both: past the trigger (vacuum is behind), and enough dead rows to slow a scan.

/** Dead rows that start to matter to a scan (a few MB of herald.jobs or herald.job_events). */
const DEAD_ROWS_THAT_MATTER = 10_000;

export function vacuumOverdue(live: number | null, dead: number | null): boolean {
  return live != null && dead != null && dead >= DEAD_ROWS_THAT_MATTER && dead > 50 + 0.2 * live;
}
