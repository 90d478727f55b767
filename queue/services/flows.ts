// Workflows, as the core offers them: creating a flow (jobs with refs and dependsOn, in one
// transaction), jobs that wait for existing jobs (dependsOn: [id]), reading, cancelling and
// retrying a flow, and the parents a handler sees (ctx.parents). The unblocking happens in the
// database, in the transaction that finishes the last parent (drizzle/0016_flow_triggers.sql).
import { ConflictError, NotFoundError, ValidationError, fromPgError } from '../errors.ts';
import { dependencyOrder } from '../flow-graph.ts';
import { toJob, type Job, type OnParentFailure } from '../job.ts';
import type { Actor, JobStatus } from '../schema/index.ts';
import { DEFAULTS, MAX_FLOW_EDGES } from '../defaults.ts';
import { checkProducerKey } from '../schedule-keys.ts';
import type { EnqueueRecord } from '../sql/enqueue.ts';
import type { Executor, Result } from '../sql/statement.ts';
import {
  cancelFlow, childrenOf, flowEdges, flowJobs, getFlow, insertEdges, insertFlow, jobsById, listFlows, lockParents, parentsOf, retryFlow,
  settleChildren, FLOW_STATUSES, type FlowRow, type FlowStatus, type ParentRow,
} from '../sql/flows.ts';
import { retryOnConflict, type Db } from './db.ts';
import { insertJobs, toRecord, type EnqueueInput, type Enqueued } from './insert.ts';

export { FLOW_STATUSES, type FlowStatus };

/** One job of a flow: an enqueue body with its ref and the refs it waits for. */
export interface FlowJobInput {
  ref: string;
  dependsOn?: string[];
  onParentFailure?: OnParentFailure;
  job: EnqueueInput;
}

export interface FlowInfo {
  id: string;
  name: string | null;
  status: FlowStatus;
  createdAt: string;
  /** When its last job finished; null while it runs. */
  finishedAt: string | null;
  /** Jobs per status (statuses with none are 0). */
  counts: Record<JobStatus, number>;
}

export interface FlowDetail {
  flow: FlowInfo;
  jobs: Job[];
  /** [parentId, childId] pairs. */
  edges: [string, string][];
}

/** A parent as a handler sees it (ctx.parents), in dependsOn order. */
export type Parent = ParentRow;

const ZERO_COUNTS = (): Record<JobStatus, number> => ({ queued: 0, running: 0, succeeded: 0, failed: 0, cancelled: 0, blocked: 0 });

function toFlowInfo(r: FlowRow & { status: FlowStatus }): FlowInfo {
  return {
    id: r.id,
    name: r.name,
    status: r.status,
    createdAt: r.created_at.toISOString(),
    finishedAt: r.status === 'running' ? null : (r.finished_at?.toISOString() ?? null),
    counts: { ...ZERO_COUNTS(), ...r.counts },
  };
}

/** The most jobs one flow (or one batch) may create. */
export const MAX_FLOW_JOBS = 1000;

/** Refuses a request whose jobs carry more than MAX_FLOW_EDGES dependsOn entries in all. */
function checkEdges(inputs: { dependsOn?: string[] }[]): void {
  const edges = inputs.reduce((n, i) => n + (i.dependsOn?.length ?? 0), 0);
  if (edges > MAX_FLOW_EDGES) throw new ValidationError(`dependsOn names ${edges} parents in all; a request may carry at most ${MAX_FLOW_EDGES}`);
}

export class FlowService {
  constructor(private readonly db: Db) {}

  /** An enqueue body as a row; schedule: keys stay the scheduler's, as for any producer. */
  private record(input: EnqueueInput): EnqueueRecord {
    checkProducerKey(input.idempotencyKey);
    return toRecord(input);
  }

  /**
   * Creates a flow: its jobs, inserted parents first so each parent has a smaller id than its
   * children, and their edges, in one transaction. Jobs with parents start blocked. Returns the
   * jobs in request order.
   */
  async create(name: string | null, inputs: FlowJobInput[]): Promise<{ flow: FlowInfo; jobs: Job[] }> {
    if (inputs.length === 0 || inputs.length > MAX_FLOW_JOBS) throw new ValidationError(`a flow has 1 to ${MAX_FLOW_JOBS} jobs, got ${inputs.length}`);
    checkEdges(inputs);
    const order = dependencyOrder(inputs);
    const hasChildren = new Set(inputs.flatMap((i) => i.dependsOn ?? []));
    const records = order.map((i) => this.record(inputs[i].job));
    try {
      return await this.db.transaction(async (c) => {
        const flow = (await this.db.run(insertFlow, [name], c)).rows[0];
        order.forEach((i, k) => {
          const input = inputs[i];
          const parents = input.dependsOn?.length ?? 0;
          Object.assign(records[k], {
            flow_id: flow.id,
            ref: input.ref,
            status: parents ? 'blocked' : 'queued',
            has_children: hasChildren.has(input.ref),
            ...(parents ? { on_parent_failure: input.onParentFailure ?? 'cancel' } : {}),
          } satisfies Partial<EnqueueRecord>);
        });
        const made = await insertJobs(this.db, c, records);
        const ids = new Map<string, string>();
        const jobs: Job[] = new Array<Job>(inputs.length);
        made.forEach((m, k) => {
          const input = inputs[order[k]];
          if (m instanceof Error) throw m;
          if (!m.created) {
            throw new ConflictError(`ref "${input.ref}": idempotency key "${m.job.idempotencyKey}" already made job ${m.job.id}; a flow makes new jobs only`, 'HERALD_CONFLICT_IDEMPOTENCY');
          }
          ids.set(input.ref, m.job.id);
          jobs[order[k]] = m.job;
        });
        const edges: [string[], string[], number[]] = [[], [], []];
        inputs.forEach((input, i) => {
          input.dependsOn?.forEach((ref, pos) => {
            edges[0].push(jobs[i].id);
            edges[1].push(ids.get(ref)!);
            edges[2].push(pos);
          });
          jobs[i].dependsOn = (input.dependsOn ?? []).map((ref) => ids.get(ref)!);
        });
        if (edges[0].length) await this.db.run(insertEdges, edges, c);
        const counts = ZERO_COUNTS();
        for (const j of jobs) counts[j.status]++;
        return {
          flow: { id: flow.id, name, status: 'running' as const, createdAt: flow.created_at.toISOString(), finishedAt: null, counts },
          jobs,
        };
      });
    } catch (err) {
      throw fromPgError(err);
    }
  }

  /**
   * Jobs that wait for existing jobs (dependsOn: [jobId]), all or nothing. The parents are locked
   * and marked first; then the new jobs are settled at once, so one whose parents have all ended
   * is queued (or cancelled) before this returns. An unknown parent id is a ValidationError.
   */
  async enqueueAfter(inputs: EnqueueInput[]): Promise<Enqueued[]> {
    if (inputs.length > MAX_FLOW_JOBS) throw new ValidationError(`at most ${MAX_FLOW_JOBS} jobs at once, got ${inputs.length}`);
    checkEdges(inputs);
    inputs.forEach((input, i) => {
      const deps = input.dependsOn ?? [];
      const twice = deps.filter((d, k) => deps.indexOf(d) !== k);
      if (twice.length) throw new ValidationError(`${inputs.length > 1 ? `jobs[${i}]: ` : ''}dependsOn names job ${twice[0]} twice`);
    });
    const records = inputs.map((input) => {
      const r = this.record(input);
      return input.dependsOn?.length ? { ...r, status: 'blocked' as const, on_parent_failure: input.onParentFailure ?? 'cancel' } : r;
    });
    const wanted = [...new Set(inputs.flatMap((i) => i.dependsOn ?? []))];
    try {
      return await this.db.transaction(async (c) => {
        const found = new Set((await this.db.run(lockParents, [wanted], c)).rows.map((r) => r.id));
        const unknown = wanted.filter((id) => !found.has(id));
        if (unknown.length) throw new ValidationError(`dependsOn names job ${unknown.slice(0, 10).join(', ')} that does not exist`);
        const made = await insertJobs(this.db, c, records);
        const edges: [string[], string[], number[]] = [[], [], []];
        const fresh: string[] = [];
        made.forEach((m, i) => {
          if (m instanceof Error) throw m;
          if (!m.created) return; // an idempotency key returned the job it made before: keep it as it is
          const deps = inputs[i].dependsOn ?? [];
          if (deps.length === 0) return;
          fresh.push(m.job.id);
          deps.forEach((parent, pos) => {
            edges[0].push(m.job.id);
            edges[1].push(parent);
            edges[2].push(pos);
          });
        });
        if (fresh.length === 0) return made as Enqueued[];
        await this.db.run(insertEdges, edges, c);
        await this.db.run(settleChildren, [fresh], c);
        const now = new Map((await this.db.run(jobsById, [fresh], c)).rows.map((r) => [r.id, toJob(r)]));
        return (made as Enqueued[]).map((m) => ({ ...m, job: (m.created && now.get(m.job.id)) || m.job }));
      });
    } catch (err) {
      throw fromPgError(err);
    }
  }

  async get(id: string): Promise<FlowDetail | null> {
    const row = (await this.db.run(getFlow, [id])).rows[0];
    if (!row) return null;
    const [jobs, edges] = await Promise.all([this.db.run(flowJobs, [id]), this.db.run(flowEdges, [id])]);
    return {
      flow: toFlowInfo(row),
      jobs: jobs.rows.map(toJob),
      edges: edges.rows.map((e) => [e.parent, e.child]),
    };
  }

  /** Flows newest first; pass `next` back as `before`. */
  async list(q: { status?: FlowStatus; before?: string; limit?: number } = {}): Promise<{ flows: FlowInfo[]; next: string | null }> {
    const limit = q.limit ?? DEFAULTS.listLimit;
    const { rows } = await this.db.run(listFlows, [q.status ?? null, q.before ?? null, limit + 1]);
    const flows = rows.slice(0, limit).map(toFlowInfo);
    return { flows, next: rows.length > limit ? flows[flows.length - 1].id : null };
  }

  private async mustExist(id: string): Promise<void> {
    if ((await this.db.run(getFlow, [id])).rows.length === 0) throw new NotFoundError(`flow ${id} does not exist`);
  }

  /** Cancels every unfinished job of the flow (running ones through their signal). Returns how many it touched. */
  async cancel(id: string, actor?: Actor): Promise<number> {
    await this.mustExist(id);
    return this.acting(actor, (c) => this.db.run(cancelFlow, [id], c));
  }

  /** Runs the flow on from where it failed: failed and cancelled jobs run again, those with parents once they end. */
  async retry(id: string, actor?: Actor): Promise<number> {
    await this.mustExist(id);
    return this.acting(actor, (c) => this.db.run(retryFlow, [id], c));
  }

  private async acting(actor: Actor | undefined, fn: (c: Executor) => Promise<Result<unknown>>): Promise<number> {
    return retryOnConflict(() =>
      this.db.transaction(async (c) => {
        const { rowCount } = await fn(c);
        await this.db.stamp(actor, c);
        return rowCount;
      }),
    );
  }

  /** The parents of a job as its handler sees them (ctx.parents), in dependsOn order. */
  async parents(jobId: string): Promise<Parent[]> {
    return (await this.db.run(parentsOf, [jobId])).rows;
  }

  /** A job's parents (without results) and children, for its page. */
  async relatives(jobId: string): Promise<{ parents: Omit<Parent, 'result'>[]; children: Omit<Parent, 'result'>[] }> {
    const [parents, children] = await Promise.all([this.parents(jobId), this.db.run(childrenOf, [jobId])]);
    return { parents: parents.map(({ result: _result, ...p }) => p), children: children.rows };
  }
}
