// What a drained job costs the database in the claim and the outcome, and what each lever not
// pulled would take off: one connection claims `BATCH` jobs at a time with the worker's claim
// statement and completes them with its outcome statement, each in its own commit, and the
// backend's CPU per job is read from /proc (PostgreSQL must run on this machine). Variants, each
// on a fresh database, alternating round by round:
//   as shipped          the migrations as they are;
//   claim returns id    the claim returns only the id instead of the row the worker runs from;
//   no list indexes     jobs_queue_id and jobs_kind_queue dropped (the board's lists by queue and
//                       kind use them; every non-HOT update adds an entry to each);
//   no lease index      jobs_lease_expiry dropped (the reaper's scan; a claim adds an entry);
//   no counts trigger   the per-minute count rows (the board's tiles, the queue heads) not kept;
//   no event trigger    no `claimed` or `succeeded` event and none of the work done beside them:
//                       the floor of the UPDATEs themselves, not something to ship.
// Only the first is Herald as it runs; the others price a promise or a read path each.
//   node bin/run-ts.js bench/claim-levers.ts [ROUNDS] [JOBS] [BATCH]   (defaults 3, 20000, 250)
import { migrate } from '../queue/migrate.ts';
import { claimJobs, type ClaimParams } from '../queue/sql/claim.ts';
import { completeJobs } from '../queue/sql/lease.ts';
import { backendPid, dropBenchDatabase, freshBenchDatabase, median, rotate, withClient } from './peers/harness.ts';
import { schedCpuUs } from './statement-cpu.ts';

const ROUNDS = Number(process.argv[2] ?? 3);
const JOBS = Number(process.argv[3] ?? 20_000);
const BATCH = Number(process.argv[4] ?? 250);
const base = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const WORKER = 'bench-worker';

const claimText = claimJobs.claimed.text;
const VARIANTS: { name: string; setup: string; claim: string }[] = [
  { name: 'as shipped', setup: '', claim: claimText },
  { name: 'claim returns id', setup: '', claim: claimText.replace(/RETURNING[\s\S]*$/, 'RETURNING j.id') },
  { name: 'no list indexes', setup: 'DROP INDEX herald.jobs_queue_id; DROP INDEX herald.jobs_kind_queue', claim: claimText },
  { name: 'no lease index', setup: 'DROP INDEX herald.jobs_lease_expiry', claim: claimText },
  { name: 'no counts trigger', setup: 'ALTER TABLE herald.jobs DISABLE TRIGGER jobs_counts_after_update', claim: claimText },
  { name: 'no event trigger', setup: 'ALTER TABLE herald.jobs DISABLE TRIGGER jobs_after_update', claim: claimText },
];

/** Backend µs per job of the claim and of the outcome, for one drain of JOBS. */
async function drain(variant: (typeof VARIANTS)[number]): Promise<{ claim: number; complete: number }> {
  const url = await freshBenchDatabase(base, 'claim_levers');
  await migrate(url);
  return withClient(url, async (c) => {
    if (variant.setup) await c.query(variant.setup);
    await c.query(`INSERT INTO herald.jobs (kind, payload) SELECT 'noop', '{}' FROM generate_series(1, $1::int)`, [JOBS]);
    await c.query('ANALYZE herald.jobs');
    const pid = await backendPid(c);
    const params: ClaimParams<null> = [null, [], BATCH, WORKER, null, 30_000, ['noop']];
    let claimUs = 0;
    let completeUs = 0;
    let done = 0;
    for (;;) {
      let t = schedCpuUs(pid);
      const { rows } = await c.query<{ id: string; attempt: number }>({ name: 'claim', text: variant.claim, values: params });
      claimUs += schedCpuUs(pid) - t;
      if (rows.length === 0) break;
      const ids = rows.map((r) => r.id);
      t = schedCpuUs(pid);
      const completed = await c.query({
        name: 'complete',
        text: completeJobs.text,
        values: [ids, ids.map(() => 1), WORKER, ids.map(() => 'null')],
      });
      completeUs += schedCpuUs(pid) - t;
      if (completed.rowCount !== ids.length) throw new Error(`completed ${completed.rowCount} of ${ids.length}`);
      done += ids.length;
    }
    if (done !== JOBS) throw new Error(`drained ${done} of ${JOBS}`);
    return { claim: claimUs / JOBS, complete: completeUs / JOBS };
  });
}

const results = new Map<string, { claim: number[]; complete: number[] }>(VARIANTS.map((v) => [v.name, { claim: [], complete: [] }]));
for (let r = 0; r < ROUNDS; r++) {
  for (const v of rotate(VARIANTS, r)) {
    const got = await drain(v);
    results.get(v.name)!.claim.push(got.claim);
    results.get(v.name)!.complete.push(got.complete);
  }
}
console.log(`claim-levers: ${JOBS} jobs, ${BATCH} a statement, ${ROUNDS} rounds, medians of backend µs per job`);
console.log(`${'variant'.padEnd(20)} ${'claim'.padStart(6)} ${'outcome'.padStart(8)} ${'both'.padStart(6)}`);
for (const [name, { claim, complete }] of results) {
  const [a, b] = [median(claim), median(complete)];
  console.log(`${name.padEnd(20)} ${a.toFixed(1).padStart(6)} ${b.toFixed(1).padStart(8)} ${(a + b).toFixed(1).padStart(6)}`);
}
await dropBenchDatabase(base, 'claim_levers');
