// Manual runs of one peer: npx tsx bench/peers/run-peer.ts <name> <drain|latency> [DATABASE_URL]
// Sizes follow the bench defaults; override with BENCH_JOBS, BENCH_LATENCY_COUNT, BENCH_LATENCY_INTERVAL_MS.
import { DEFAULT_DATABASE_URL, ensureDatabase } from './harness.ts';
import { peerByName, peers } from './index.ts';
import { percentiles } from './stats.ts';

const usage = `usage: run-peer.ts <${peers.map((p) => p.name).join('|')}> <drain|latency> [DATABASE_URL]`;

function envInt(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`${name} must be a positive integer, got ${raw}`);
  return n;
}

async function main(): Promise<void> {
  const [name, mode, databaseUrl = DEFAULT_DATABASE_URL] = process.argv.slice(2);
  const peer = name === undefined ? undefined : peerByName(name);
  if (!peer || (mode !== 'drain' && mode !== 'latency')) {
    console.error(usage);
    process.exitCode = 2;
    return;
  }
  await ensureDatabase(databaseUrl);

  if (mode === 'drain') {
    const jobs = envInt('BENCH_JOBS', 20_000);
    const rate = await peer.drain(databaseUrl, jobs);
    console.log(`${peer.name} drain: ${jobs} jobs, ${Math.round(rate)} jobs/s`);
  } else {
    const count = envInt('BENCH_LATENCY_COUNT', 300);
    const intervalMs = envInt('BENCH_LATENCY_INTERVAL_MS', 10);
    const { p50, p95, p99 } = percentiles(await peer.latency(databaseUrl, count, intervalMs));
    const ms = (x: number): string => x.toFixed(1);
    console.log(`${peer.name} latency: ${count} jobs ${intervalMs} ms apart, p50 ${ms(p50)} / p95 ${ms(p95)} / p99 ${ms(p99)} ms`);
  }
  const silenced = peer.silencedErrors?.() ?? 0;
  if (silenced > 0) console.log(`${peer.name}: ${silenced} silenced error/warning events`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
