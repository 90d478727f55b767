// The one database handle every service of a process shares: the pool, the statement runner
// (its prepared-or-not state is learned once per process) and the options the statements need.
import type pg from 'pg';
import { inTransaction } from '../database.ts';
import { DEFAULTS } from '../defaults.ts';
import { fromPgError } from '../errors.ts';
import type { Actor } from '../schema/index.ts';
import { stampActor } from '../sql/admin.ts';
import { StatementRunner, type Executor, type Result, type Statement } from '../sql/statement.ts';

export interface QueueOptions {
  leaseMs?: number;
  backoffBaseMs?: number;
  backoffMaxMs?: number;
}

export class Db {
  readonly leaseMs: number;
  readonly backoffBaseMs: number;
  readonly backoffMaxMs: number;

  /** Prepared statements, switched off by itself behind a transaction pooler. */
  private readonly sql = new StatementRunner();

  constructor(readonly pool: pg.Pool, opts: QueueOptions = {}) {
    this.leaseMs = opts.leaseMs ?? DEFAULTS.leaseMs;
    this.backoffBaseMs = opts.backoffBaseMs ?? DEFAULTS.backoffBaseMs;
    this.backoffMaxMs = opts.backoffMaxMs ?? DEFAULTS.backoffMaxMs;
  }

  /** Every statement goes through here: on the pool, or on `db` (a client in a transaction). */
  run<P extends readonly unknown[], R>(st: Statement<P, R>, values: P, db: Executor = this.pool): Promise<Result<R>> {
    return this.sql.run(db, st, values);
  }

  transaction<T>(fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
    return inTransaction(this.pool, fn);
  }

  /** Runs fn in one transaction whose events then name `actor` (data.by); on the pool without one. */
  async as<T>(actor: Actor | undefined, fn: (db: Executor) => Promise<T>): Promise<T> {
    if (!actor) return fn(this.pool);
    return this.transaction(async (c) => {
      const result = await fn(c);
      await this.stamp(actor, c);
      return result;
    });
  }

  /** Signs the events transaction c wrote so far with `actor` (data.by); run it last. */
  async stamp(actor: Actor | undefined, c: Executor): Promise<void> {
    if (actor) await this.run(stampActor, [JSON.stringify(actor)], c);
  }
}

/** For `.catch`: a database error as the core's error (a bad filter value is the caller's 400). */
export const rethrowPg = (err: unknown): never => {
  throw fromPgError(err);
};
