// Per-statement accounting for the bench: every node-postgres query made in this process is
// counted by statement (its prepared name, or its first words), with the rows it returned and the
// backend CPU it cost. The backend's CPU comes from /proc/<pid>/schedstat (nanoseconds, unlike
// /proc/<pid>/stat's 10 ms ticks), read once when a connection is first seen and then when each
// statement's answer is complete: a statement is charged what its backend spent since the answer
// before (an idle backend spends nothing). So the figures are CPU time, not wall time: a loaded
// machine stretches them little. Linux, and PostgreSQL on this machine, only.
import fs from 'node:fs';
import pg from 'pg';

export interface StatementTally {
  /** Statements run. */
  n: number;
  /** Of those, how many were sent to a connection with nothing in flight: one wait each. */
  trips: number;
  rows: number;
  /** Rows of the first FIRST_KEPT statements, in order (how fast a worker's claims grow). */
  first: number[];
  /** Backend CPU, µs. */
  cpuUs: number;
}

/** CPU time (on-CPU) of process `pid` so far in µs, or NaN when it is not a local process. */
export function schedCpuUs(pid: number): number {
  try {
    return Number(fs.readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0]) / 1000;
  } catch {
    return NaN;
  }
}

/** The machine's busy CPU time so far (all cores: everything but idle and iowait), µs, from /proc/stat. */
export function machineBusyUs(): number {
  const f = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal (guest time is already in user)
  const busy = f[0] + f[1] + f[2] + f[5] + f[6] + f[7];
  return (busy / 100) * 1e6;
}

interface Session {
  inFlight: number;
  /** The backend's CPU at the last reading: what the next answer is charged from. */
  mark: number;
}

/** How many of each statement's first runs keep their row counts (StatementTally.first). */
export const FIRST_KEPT = 5;

type Callback = (err: Error | null, res?: pg.QueryResult) => void;

/** The label of a query: a prepared statement's name without its `herald_` prefix, else its first words (numbers as #). */
function labelOf(config: unknown): string {
  if (typeof config === 'string') return config.replace(/\s+/g, ' ').replace(/\d+/g, '#').trim().slice(0, 30);
  const c = config as { name?: string; text?: string };
  if (c.name) return c.name.replace(/^herald_/, '').replace(/\.\d+$/, '');
  return labelOf(c.text ?? '?');
}

/**
 * Installs the counting wrapper on pg.Client.prototype.query (once per process). `skip`: backends
 * not to count (the bench's own producer, say). Counting runs between start() and stop().
 */
export class StatementCpu {
  readonly tallies = new Map<string, StatementTally>();
  /** Every backend seen, with its CPU when first seen. */
  readonly backends = new Map<number, number>();
  /** /proc reads made for the accounting, and what one costs this process (µs of CPU, measured at start). */
  private reads = 0;
  private readUs = 0;
  private on = false;
  private readonly sessions = new WeakMap<pg.Client, Session>();

  constructor(private readonly skip: (pid: number) => boolean = () => false) {
    const proto = pg.Client.prototype as unknown as { query: (...a: unknown[]) => unknown };
    const original = proto.query;
    // eslint-disable-next-line @typescript-eslint/no-this-alias
    const self = this;
    proto.query = function (this: pg.Client, config: unknown, values?: unknown, callback?: unknown) {
      const pid = (this as unknown as { processID: number | null }).processID;
      const custom = config !== null && typeof config === 'object' && typeof (config as { submit?: unknown }).submit === 'function';
      if (!self.on || custom || !pid || self.skip(pid)) return original.call(this, config, values, callback);
      const done = self.begin(this, pid, labelOf(config));
      if (typeof values === 'function') return original.call(this, config, wrap(values as Callback, done));
      if (typeof callback === 'function') return original.call(this, config, values, wrap(callback as Callback, done));
      const p = original.call(this, config, values) as Promise<pg.QueryResult>;
      return p.then(
        (r) => (done(r), r),
        (err: unknown) => {
          done(undefined);
          throw err;
        },
      );
    };
  }

  start(): void {
    this.tallies.clear();
    this.backends.clear();
    this.reads = 0;
    const n = 2_000;
    const t0 = process.cpuUsage();
    for (let i = 0; i < n; i++) schedCpuUs(process.pid);
    const t = process.cpuUsage(t0);
    this.readUs = (t.user + t.system) / n;
    this.on = true;
  }

  /** µs this process spent reading /proc for the accounting: the bench's own cost, not the worker's. */
  get selfUs(): number {
    return this.reads * this.readUs;
  }

  stop(): void {
    this.on = false;
  }

  private cpu(pid: number): number {
    this.reads++;
    return schedCpuUs(pid);
  }

  private begin(client: pg.Client, pid: number, label: string): (r: pg.QueryResult | undefined) => void {
    let s = this.sessions.get(client);
    if (!s) this.sessions.set(client, (s = { inFlight: 0, mark: 0 }));
    const t = this.tallies.get(label) ?? { n: 0, trips: 0, rows: 0, first: [], cpuUs: 0 };
    this.tallies.set(label, t);
    if (!this.backends.has(pid)) this.backends.set(pid, (s.mark = this.cpu(pid)));
    if (s.inFlight === 0) t.trips++;
    s.inFlight++;
    const session = s;
    return (r) => {
      const now = this.cpu(pid);
      t.n++;
      t.rows += r?.rowCount ?? 0;
      if (t.first.length < FIRST_KEPT) t.first.push(r?.rowCount ?? 0);
      t.cpuUs += now - session.mark;
      session.mark = now;
      session.inFlight--;
    };
  }
}

const wrap = (cb: Callback, done: (r: pg.QueryResult | undefined) => void): Callback => (err, res) => {
  done(err ? undefined : res);
  cb(err, res);
};
