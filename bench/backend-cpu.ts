// The CPU a local PostgreSQL instance spends, read from /proc (Linux, the instance on this
// machine): all of it (the postmaster and every child, those that exited included), and its
// backends' share by who connected (application_name), sampled while a measurement runs.
import fs from 'node:fs';
import pg from 'pg';
import { backendPid, processCpuUs } from './peers/harness.ts';

const CLOCK_TICKS = 100;
const SAMPLE_MS = 200;

/** utime + stime + the reaped children's cutime + cstime of `pid`, in µs. */
function treeCpuUs(pid: number): number {
  const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return ((Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) / CLOCK_TICKS) * 1e6;
}

const children = (pid: number): number[] =>
  fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').split(' ').filter(Boolean).map(Number);

/** The whole instance's CPU so far, in µs: the postmaster, its reaped children, its live ones. */
function instanceCpuUs(postmaster: number): number {
  return treeCpuUs(postmaster) + children(postmaster).reduce((s, c) => s + (Number.isNaN(processCpuUs(c)) ? 0 : processCpuUs(c)), 0);
}

interface Backend { pid: number; application_name: string }

/**
 * Samples the instance of `url` from start() to stop(): its whole CPU, and the CPU of the backends
 * whose application_name starts with each of `prefixes` (a backend seen first mid-window counts
 * from its birth; one that ends between two samples loses its last 200 ms at most).
 */
export class BackendCpu {
  private client: pg.Client;
  private postmaster = 0;
  private instanceStart = 0;
  private readonly first = new Map<number, number>();
  private readonly last = new Map<number, { cpu: number; name: string }>();
  private timer?: NodeJS.Timeout;
  private sampling?: Promise<void>;
  private startedAt = 0;

  constructor(url: string, private readonly prefixes: string[]) {
    this.client = new pg.Client({ connectionString: url, application_name: 'herald:bench-cpu' });
  }

  async start(): Promise<void> {
    await this.client.connect();
    this.postmaster = Number(fs.readFileSync(`/proc/${await backendPid(this.client)}/stat`, 'utf8').split(') ')[1].split(' ')[1]);
    await this.sample(true);
    this.instanceStart = instanceCpuUs(this.postmaster);
    this.startedAt = performance.now();
    this.timer = setInterval(() => {
      // One sample at a time: on a loaded machine one can outlast the interval.
      this.sampling ??= this.sample(false).finally(() => (this.sampling = undefined));
    }, SAMPLE_MS);
  }

  private async sample(initial: boolean): Promise<void> {
    const { rows } = await this.client.query<Backend>(`SELECT pid, application_name FROM pg_stat_activity WHERE pid <> pg_backend_pid()`);
    for (const b of rows) {
      if (!this.prefixes.some((p) => b.application_name.startsWith(p))) continue;
      const cpu = processCpuUs(b.pid);
      if (Number.isNaN(cpu)) continue;
      if (!this.first.has(b.pid)) this.first.set(b.pid, initial ? cpu : 0);
      this.last.set(b.pid, { cpu, name: b.application_name });
    }
  }

  /** CPU ms per second of the window: the instance's, and by prefix. */
  async stop(): Promise<{ instance: number; byPrefix: Record<string, number> }> {
    clearInterval(this.timer);
    await this.sampling;
    await this.sample(false);
    const seconds = (performance.now() - this.startedAt) / 1000;
    const instance = (instanceCpuUs(this.postmaster) - this.instanceStart) / 1000 / seconds;
    const byPrefix = Object.fromEntries(this.prefixes.map((p) => [p, 0]));
    for (const [pid, { cpu, name }] of this.last) {
      // The longest prefix that matches: 'herald:server:replica' is not 'herald:server'.
      const prefix = this.prefixes.filter((x) => name.startsWith(x)).sort((a, b) => b.length - a.length)[0];
      byPrefix[prefix] += (cpu - this.first.get(pid)!) / 1000 / seconds;
    }
    await this.client.end();
    return { instance, byPrefix };
  }
}
