// `npm run bench -- --durable [--rounds N] [--json]`: Herald's durable execution (ctx.step,
// ctx.sleep, ctx.waitFor) against DBOS Transact (bench/peers/dbos.ts), each workload in a fresh
// database of its own on the same PostgreSQL, the runner order rotating each round; medians of
// the rounds. Workloads:
//   - BENCH_DURABLE_JOBS (200) workflows of BENCH_DURABLE_STEPS (100) no-op steps at concurrency 16:
//     steps/s, and one step's call p50/p99;
//   - BENCH_DURABLE_SERIAL_JOBS (5) such workflows one at a time (concurrency 1);
//   - BENCH_DURABLE_COUNT (100) workflows one after another sleeping 1 ms (SLEEP_MS): the sleep call to the next line;
//   - as many waiting for a signal: just before the send to the line after the wait;
//   - Herald only: a replay of 1,000 stored steps (BENCH_DURABLE_REPLAYS (10) jobs).
import { heraldDurable } from './durable-herald.ts';
import dbos from './peers/dbos.ts';
import { CONCURRENCY, SLEEP_MS, median, rotate } from './peers/harness.ts';
import { percentiles, type Percentiles } from './peers/stats.ts';
import type { DurableRunner } from './peers/types.ts';

const RUNNERS: DurableRunner[] = [heraldDurable, dbos];
const REPLAY_STEPS = 1_000;

export interface DurableSizes { jobs: number; steps: number; serialJobs: number; count: number; replays: number }

interface Figures {
  stepsPerSecond: number;
  stepMs: Percentiles;
  serialStepsPerSecond: number;
  serialStepMs: Percentiles;
  sleepBrieflyMs: Percentiles;
  signalMs: Percentiles;
}

const two = (x: number) => Math.round(x * 100) / 100;
const medianOf = (ps: Percentiles[]): Percentiles => ({
  p50: two(median(ps.map((p) => p.p50))), p95: two(median(ps.map((p) => p.p95))), p99: two(median(ps.map((p) => p.p99))),
});

/** `fresh(what)` makes an empty database and returns its URL. */
export async function durableBench(
  fresh: (what: string) => Promise<string>,
  sizes: DurableSizes,
  rounds: number,
  say: (line: string) => void,
): Promise<{ figures: Record<string, Figures>; replayMs: Percentiles }> {
  const runs = new Map<string, Figures[]>(RUNNERS.map((r) => [r.name, []]));
  const replays: Percentiles[] = [];
  for (let round = 0; round < rounds; round++) {
    for (const r of rotate(RUNNERS, round)) {
      const db = () => fresh(`durable_${r.name}`);
      const wide = await r.steps(await db(), sizes.jobs, sizes.steps, CONCURRENCY);
      const serial = await r.steps(await db(), sizes.serialJobs, sizes.steps, 1);
      const f: Figures = {
        stepsPerSecond: Math.round(wide.stepsPerSecond),
        stepMs: percentiles(wide.stepMs),
        serialStepsPerSecond: Math.round(serial.stepsPerSecond),
        serialStepMs: percentiles(serial.stepMs),
        sleepBrieflyMs: percentiles(await r.sleepBriefly(await db(), sizes.count)),
        signalMs: percentiles(await r.signal(await db(), sizes.count)),
      };
      runs.get(r.name)!.push(f);
      say(`  round ${round + 1}: ${r.name} ${f.stepsPerSecond} steps/s at ${CONCURRENCY} (step p50 ${f.stepMs.p50.toFixed(2)} ms), ` +
        `${f.serialStepsPerSecond} steps/s one at a time (p50 ${f.serialStepMs.p50.toFixed(2)} ms), ` +
        `sleep(${SLEEP_MS}) p50 ${f.sleepBrieflyMs.p50.toFixed(2)} ms, signal p50 ${f.signalMs.p50.toFixed(2)} ms`);
    }
    const replay = percentiles(await heraldDurable.replay(await fresh('durable_replay'), REPLAY_STEPS, sizes.replays));
    replays.push(replay);
    say(`  round ${round + 1}: herald replay of ${REPLAY_STEPS} stored steps p50 ${replay.p50.toFixed(2)} ms`);
  }
  const figures = Object.fromEntries([...runs].map(([name, fs]) => [name, {
    stepsPerSecond: Math.round(median(fs.map((f) => f.stepsPerSecond))),
    stepMs: medianOf(fs.map((f) => f.stepMs)),
    serialStepsPerSecond: Math.round(median(fs.map((f) => f.serialStepsPerSecond))),
    serialStepMs: medianOf(fs.map((f) => f.serialStepMs)),
    sleepBrieflyMs: medianOf(fs.map((f) => f.sleepBrieflyMs)),
    signalMs: medianOf(fs.map((f) => f.signalMs)),
  }]));
  return { figures, replayMs: medianOf(replays) };
}

/** Herald against DBOS, one line a figure, with herald/dbos (throughput: above 1 is better; times: below 1). */
export function durableTable(r: { figures: Record<string, Figures>; replayMs: Percentiles }, sizes: DurableSizes): string {
  const h = r.figures.herald;
  const d = r.figures.dbos;
  const rows: [string, string, string, string][] = [
    [`steps/s, ${sizes.jobs} × ${sizes.steps} steps at ${CONCURRENCY}`, String(h.stepsPerSecond), String(d.stepsPerSecond), `${(h.stepsPerSecond / d.stepsPerSecond).toFixed(2)}×`],
    ['  one step p50 / p99 ms', pp(h.stepMs), pp(d.stepMs), faster(h.stepMs, d.stepMs)],
    [`steps/s, ${sizes.serialJobs} × ${sizes.steps} one at a time`, String(h.serialStepsPerSecond), String(d.serialStepsPerSecond), `${(h.serialStepsPerSecond / d.serialStepsPerSecond).toFixed(2)}×`],
    ['  one step p50 / p99 ms', pp(h.serialStepMs), pp(d.serialStepMs), faster(h.serialStepMs, d.serialStepMs)],
    [`sleep(${SLEEP_MS}) → next line p50 / p99 ms`, pp(h.sleepBrieflyMs), pp(d.sleepBrieflyMs), faster(h.sleepBrieflyMs, d.sleepBrieflyMs)],
    ['signal sent → after the wait p50 / p99 ms', pp(h.signalMs), pp(d.signalMs), faster(h.signalMs, d.signalMs)],
    [`replay of ${REPLAY_STEPS} stored steps p50 / p99 ms`, pp(r.replayMs), '', ''],
  ];
  const head: [string, string, string, string] = ['', 'herald', 'dbos', 'herald/dbos'];
  return [head, ...rows].map(([a, b, c, x]) => `${a.padEnd(46)}${b.padStart(18)}${c.padStart(18)}${x.padStart(13)}`).join('\n');
}

const pp = (p: Percentiles) => `${p.p50.toFixed(2)} / ${p.p99.toFixed(2)}`;
const faster = (h: Percentiles, d: Percentiles) => `${(h.p50 / d.p50).toFixed(2)}×`;
