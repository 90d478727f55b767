// The demo tasks every worker has (README, "Tasks"): enough to try every state without writing a task.
import { setTimeout as delay } from 'node:timers/promises';
import type { Task } from './task.ts';

type Payload = Record<string, unknown> | null | undefined;

function count(payload: Payload, field: string, kind: string): number {
  const v = payload?.[field];
  if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) {
    throw new TypeError(`${kind}: payload.${field} must be a number >= 0, got ${JSON.stringify(v)}`);
  }
  return v;
}

const sleep: Task = async (payload: Payload, { signal }) => {
  const ms = count(payload, 'ms', 'sleep');
  await delay(ms, undefined, { signal });
  return { slept: ms };
};

const echo: Task = async (payload) => payload;

const fail: Task = async (payload: Payload) => {
  const message = typeof payload?.message === 'string' ? payload.message : 'fail: this task always fails';
  throw new Error(message);
};

const flaky: Task = async (payload: Payload, { job }) => {
  const failTimes = count(payload, 'failTimes', 'flaky');
  if (job.attempt <= failTimes) throw new Error(`flaky: planned failure on attempt ${job.attempt} of ${failTimes}`);
  return { attempt: job.attempt };
};

const progress: Task = async (payload: Payload, ctx) => {
  const steps = Math.floor(count(payload, 'steps', 'progress'));
  const stepMs = count(payload, 'stepMs', 'progress');
  for (let i = 1; i <= steps; i++) {
    await delay(stepMs, undefined, { signal: ctx.signal });
    await ctx.progress((i / steps) * 100, `step ${i} of ${steps}`);
  }
  return { steps };
};

// Fan-in: the parents' results, in dependsOn order.
const gather: Task = async (_payload, { parents }) => ({ parents: parents.map((p) => ({ ref: p.ref, result: p.result })) });

export const builtinTasks: Readonly<Record<string, Task>> = { sleep, echo, fail, flaky, progress, gather };
