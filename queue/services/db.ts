// The one database handle every service of a process shares: the pool, the statement runner
// (its prepared-or-not state is learned once per process) and the options the statements need.
import type pg from 'pg';
import { inTransaction } from '../database.ts';
import type { ReadReplica } from '../replica.ts';
import { DEFAULTS } from '../defaults.ts';
import { fromPgError } from '../errors.ts';
import type { Actor } from '../schema/index.ts';
import { stampActor } from '../sql/admin.ts';
import { StatementRunner, type Executor, type Result, type Statement } from '../sql/statement.ts';

export interface QueueOptions {
  leaseMs?: number;
  backoffBaseMs?: number;
  backoffMaxMs?: number;
  /**
   * Reads through this handle go to the replica while it is usable (a server's read-side Queue,
   * docs/replicas.md); statements given a client or the pool explicitly run there, as always.
   */
  replica?: ReadReplica;
}

export class Db {
  readonly leaseMs: number;
  readonly backoffBaseMs: number;
  readonly backoffMaxMs: number;
  readonly replica?: ReadReplica;

  /** Prepared statements, switched off by itself behind a transaction pooler. */
  private readonly sql = new StatementRunner();

  constructor(readonly pool: pg.Pool, opts: QueueOptions = {}) {
    this.leaseMs = opts.leaseMs ?? DEFAULTS.leaseMs;
    this.backoffBaseMs = opts.backoffBaseMs ?? DEFAULTS.backoffBaseMs;
    this.backoffMaxMs = opts.backoffMaxMs ?? DEFAULTS.backoffMaxMs;
    this.replica = opts.replica;
  }

  /** Every statement goes through here: on the pool (or the replica, see QueueOptions), or on `db` (a client in a transaction). */
  run<P extends readonly unknown[], R>(st: Statement<P, R>, values: P, db?: Executor): Promise<Result<R>> {
    if (db) return this.sql.run(db, st, values);
    if (this.replica) return this.replica.read((pool) => this.sql.run(pool, st, values));
    return this.sql.run(this.pool, st, values);
  }

  transaction<T>(fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
    return inTransaction(this.pool, fn);
  }

  /**
   * Runs fn in one transaction whose events then name `actor` (data.by); on the pool without one,
   * unless fn's statements must share a transaction all the same.
   */
  async as<T>(actor: Actor | undefined, fn: (db: Executor) => Promise<T>, opts: { transaction?: boolean } = {}): Promise<T> {
    if (!actor && !opts.transaction) return fn(this.pool);
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

/**
 * Runs fn (a whole transaction) again when PostgreSQL broke a deadlock or serialization conflict
 * by aborting it. A manual action's trigger work (settling children, the cascade of a cancel)
 * locks rows it cannot know beforehand, so two such actions may still meet in opposite orders.
 */
export async function retryOnConflict<T>(fn: () => Promise<T>, tries = 5): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await fn();
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (i >= tries || (code !== '40P01' && code !== '40001')) throw fromPgError(err);
    }
  }
}
