// Where 64 single-job producers lose against a table with no trigger, part by part:
//   node bin/run-ts.js bench/producer-parts.ts [DATABASE_URL]
// The `--producers` workload of `npm run bench` (BENCH_PRODUCERS sessions, BENCH_PRODUCER_SECONDS
// each run), with herald.jobs' insert trigger cut down step by step in a bench database:
//   - herald:    as shipped;
//   - no wake:   herald.wake_at_commit does nothing (no intent row, no commit-time trigger, no NOTIFY);
//   - no writes: the one-job path writes no `enqueued` event and no count;
//   - neither:   both of the above: the trigger still runs its statement;
//   - empty:     a trigger function that returns at once (the transition table is still built).
// Every variant but the first breaks Herald (no wake-ups, no history): this only prices the parts.
// The variants are made from drizzle/current's text; when a function changes, the replace below
// fails loudly rather than measuring something else. Alternating over BENCH_ROUNDS (5), medians.
import fs from 'node:fs';
import path from 'node:path';
import { dropBenchDatabase, freshBenchDatabase, median, rotate, withClient } from './peers/harness.ts';
import { producerRate, setupProducers } from './producers.ts';

const SESSIONS = Number(process.env.BENCH_PRODUCERS ?? 64);
const SECONDS = Number(process.env.BENCH_PRODUCER_SECONDS ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const base = process.argv[2] ?? process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

const current = (fn: string) =>
  fs.readFileSync(path.join(import.meta.dirname, '..', 'drizzle', 'current', 'functions', `${fn}.sql`), 'utf8').replace(/^--.*\n/, '');
function replaced(text: string, from: string, to: string): string {
  if (text.split(from).length !== 2) throw new Error(`drizzle/current changed: "${from.trim()}" is not there once`);
  return text.replace(from, to);
}

const insert = current('jobs_after_insert');
const wake = current('wake_at_commit');
// The one-job path's event and count inserts, each given a WHERE that is never true.
const noWrites = replaced(
  replaced(insert, `'maxAttempts', n.max_attempts), n.flow_id\n      FROM new_jobs n\n`, `'maxAttempts', n.max_attempts), n.flow_id\n      FROM new_jobs n WHERE false\n`),
  `1 + pg_backend_pid() % 1024, 1\n      FROM new_jobs n\n`,
  `1 + pg_backend_pid() % 1024, 1\n      FROM new_jobs n WHERE false\n`,
);
const noWake = `CREATE OR REPLACE FUNCTION herald.wake_at_commit(targets text[]) RETURNS integer LANGUAGE plpgsql
  AS $f$ BEGIN RETURN coalesce(cardinality(targets), 0); END $f$`;
const empty = `CREATE OR REPLACE FUNCTION herald.jobs_after_insert() RETURNS trigger LANGUAGE plpgsql
  AS $f$ BEGIN RETURN NULL; END $f$`;

const variants: Record<string, string[]> = {
  herald: [insert, wake],
  'no wake': [insert, noWake],
  'no writes': [noWrites, wake],
  neither: [noWrites, noWake],
  empty: [empty, wake],
};

const url = await freshBenchDatabase(base, 'producer_parts');
await setupProducers(url);
const names = Object.keys(variants);
const ratios = new Map<string, number[]>(names.map((v) => [v, []]));
for (let round = 0; round < ROUNDS; round++) {
  for (const name of rotate(names, round)) {
    await withClient(url, async (c) => {
      for (const sql of variants[name]) await c.query(sql);
    });
    const plain = await producerRate(url, 'plain', SESSIONS, SECONDS);
    const herald = await producerRate(url, 'herald', SESSIONS, SECONDS);
    ratios.get(name)!.push(herald / plain);
  }
}
await dropBenchDatabase(base, 'producer_parts');

console.log(`${SESSIONS} producers, ${SECONDS} s a run, ${ROUNDS} rounds: inserts/s into herald.jobs ÷ into the plain table`);
console.table(names.map((name) => ({ variant: name, median: +median(ratios.get(name)!).toFixed(2), runs: ratios.get(name)!.map((r) => r.toFixed(2)).join(' ') })));
