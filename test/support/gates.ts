// Jobs the test releases. A `gated` task (test/fixtures/gated-tasks/gated.ts) runs in a real worker
// process and, before each of its steps, long-polls this loopback HTTP server until the test
// opens that step. So a test can hold a job running (or at a given progress) for exactly as long
// as it needs, whatever the machine's load, instead of hoping a timed job outlasts its steps.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import type { Queue } from '../../queue/queue.ts';
import { waitFor } from './wait.ts';

/** `--tasks` for a worker that runs gated jobs. */
export const GATED_TASKS_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'gated-tasks');

export interface Gate {
  /** Goes into the job's payload: `{gate: gate.url, steps}`. */
  readonly url: string;
  /** Lets the task through steps 1..`step` (all of them by default). */
  open(step?: number): void;
  /** Resolves once the task is waiting at `step` (it has reported every step before it). */
  reached(step: number): Promise<void>;
  /** How many times a task came to step 1: each run of the job (each attempt) comes once. */
  readonly starts: number;
}

interface GateState {
  starts: number;
  opened: number;
  waiting: number;
  held: { step: number; res: http.ServerResponse }[];
  watchers: { step: number; resolve: () => void }[];
}

export class Gates {
  private readonly gates = new Map<string, GateState>();
  private next = 0;
  private constructor(
    private readonly server: http.Server,
    private readonly base: string,
  ) {}

  static async start(): Promise<Gates> {
    // Requests arrive only after listen(), by when `gates` exists.
    const server = http.createServer((req, res) => gates.handle(req, res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const gates = new Gates(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    return gates;
  }

  create(): Gate {
    const name = `g${++this.next}`;
    const state: GateState = { starts: 0, opened: 0, waiting: 0, held: [], watchers: [] };
    this.gates.set(name, state);
    return {
      url: `${this.base}/${name}`,
      open: (step = Number.MAX_SAFE_INTEGER) => {
        state.opened = Math.max(state.opened, step);
        state.held = state.held.filter((h) => (h.step <= state.opened ? (h.res.end('open'), false) : true));
      },
      reached: (step) =>
        state.waiting >= step ? Promise.resolve() : new Promise((resolve) => state.watchers.push({ step, resolve })),
      get starts() {
        return state.starts;
      },
    };
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const [, name, stepText] = (req.url ?? '').split('/');
    const state = this.gates.get(name ?? '');
    const step = Number(stepText);
    if (!state || !Number.isInteger(step) || step < 1) {
      res.writeHead(404).end(`no gate ${req.url}`);
      return;
    }
    if (step === 1) state.starts++;
    state.waiting = Math.max(state.waiting, step);
    state.watchers = state.watchers.filter((w) => (w.step <= state.waiting ? (w.resolve(), false) : true));
    if (step <= state.opened) {
      res.end('open');
      return;
    }
    state.held.push({ step, res });
    // A task that is aborted (cancel, shutdown, killed worker) hangs up: forget its request.
    res.on('close', () => (state.held = state.held.filter((h) => h.res !== res)));
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

/**
 * Opens the gate of a job that `worker` claimed once and asserts that it then finishes on that
 * first attempt, run once: one start at the gate, and no event of a second attempt.
 */
export async function finishesOnFirstAttempt(queue: Queue, gate: Gate, jobId: string, worker: string): Promise<void> {
  gate.open();
  const done = await waitFor(async () => {
    const j = await queue.get(jobId);
    return j?.status === 'succeeded' ? j : null;
  }, { what: `job ${jobId} to finish` });
  expect(done.attempt).toBe(1);
  expect(gate.starts).toBe(1);
  const events = await queue.events(jobId);
  expect(events.map((e) => [e.type, e.attempt, e.worker])).toEqual([
    ['enqueued', 0, null],
    ['claimed', 1, worker],
    ['progress', 1, worker],
    ['succeeded', 1, worker],
  ]);
}
