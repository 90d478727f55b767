// A named SQL statement with its types: the parameters ($1, $2, ...) as a labelled tuple and the
// shape of one returned row. Declare one next to its SQL, run it with StatementRunner.run, and
// the call site gets typed rows with no cast:
//
//   export const getThing = statement<[id: string], { id: string; name: string }>('get_thing', `SELECT ...`);
//   const { rows } = await runner.run(pool, getThing, [id]);
import pg from 'pg';

export interface Statement<Params extends readonly unknown[], Row> {
  /** node-postgres prepares a named statement once per connection and reuses the plan. */
  readonly name: string;
  readonly text: string;
  /**
   * false: never prepared, so each call is planned for its own values. For optional filters
   * ("$1 IS NULL OR queue = $1"): a prepared statement may switch to a generic plan, which
   * cannot use the index the given filter needs.
   */
  readonly prepare?: false;
  /** 'array': each row an array in column order (no per-row object keyed by column). */
  readonly rowMode?: 'array';
  /** Type parsers for this statement's columns instead of node-postgres's defaults. */
  readonly parsers?: pg.CustomTypesConfig;
  /** Given up (and its connection dropped) when no answer came in this many ms. */
  readonly timeoutMs?: number;
  /** Type-level only (never set): carries Params and Row to the call site. */
  readonly types?: { params: Params; row: Row };
}

/** Row = never: a statement whose rows nobody reads (only rowCount). */
export function statement<Params extends readonly unknown[], Row = never>(
  name: string,
  text: string,
  opts: Pick<Statement<Params, Row>, 'prepare' | 'rowMode' | 'parsers' | 'timeoutMs'> = {},
): Statement<Params, Row> {
  return { name: `herald_${name}`, text: text.trim(), ...opts };
}

/**
 * How long after its timeout an attempt's lease runs out. The worker fails the attempt at the
 * timeout itself; this cap is the database's own guarantee, for a worker that cannot (a handler
 * blocking its event loop): the reaper ends the attempt once the lease is past.
 */
const TIMEOUT_GRACE_MS = 2_000;

/** When the timeout of job `j` (started at `startedAt`) caps its lease; NULL without a timeout. */
export const timeoutDeadline = (startedAt: string) =>
  `${startedAt} + make_interval(secs => (j.timeout_ms + ${TIMEOUT_GRACE_MS})::float8 / 1000)`;

/** A lease of `$n` milliseconds from now, never past the timeout of job `j` (least() skips NULL). */
export const leaseFromNow = (param: string, startedAt = 'j.started_at') =>
  `least(now() + make_interval(secs => ${param}::float8 / 1000), ${timeoutDeadline(startedAt)})`;

/** The pool, or a client inside a transaction. */
export type Executor = Pick<pg.Pool, 'query'> | pg.PoolClient;

export interface Result<Row> {
  rows: Row[];
  rowCount: number;
}

/**
 * Runs statements, prepared by name while the connection allows it. A transaction pooler
 * (pgbouncer < 1.21 in transaction mode) hands each statement to any server connection, where
 * our prepared statement may not exist (26000) or already exist (42P05). Neither error ran
 * anything, so the runner falls back to unnamed statements for good and retries.
 *
 * A migration that changes a column's type (an upgrade while this process runs) leaves each
 * statement prepared before it failing for good on its connection: "cached plan must not change
 * result type" (0A000). The runner then retires every name it prepared, so each connection
 * prepares the statements anew, and retries on the pool. In a transaction the error stands: the
 * transaction is aborted, and the caller's next try gets the new names.
 */
export class StatementRunner {
  private prepared = true;
  private generation = 0;

  async run<Params extends readonly unknown[], Row>(db: Executor, st: Statement<Params, Row>, values: Params): Promise<Result<Row>> {
    const config: pg.QueryConfig & { rowMode?: 'array'; query_timeout?: number } = {
      text: st.text,
      values: values as unknown as unknown[],
      rowMode: st.rowMode,
      types: st.parsers,
      query_timeout: st.timeoutMs,
    };
    if (!this.prepared || st.prepare === false) return toResult(await db.query(config));
    const generation = this.generation;
    try {
      return toResult(await db.query({ ...config, name: this.nameOf(st, generation) }));
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (code === '0A000' && /cached plan must not change result type/.test((err as Error).message)) {
        if (this.generation === generation) this.generation++;
        if (!(db instanceof pg.Pool)) throw err;
        return toResult(await db.query({ ...config, name: this.nameOf(st, this.generation) }));
      }
      if (code !== '26000' && code !== '42P05') throw err;
      this.prepared = false;
      return toResult(await db.query(config));
    }
  }

  private nameOf(st: Statement<readonly unknown[], unknown>, generation: number): string {
    return generation === 0 ? st.name : `${st.name}.${generation}`;
  }
}

// The one place rows become typed: the statement's declaration is the contract for its SQL.
const toResult = <Row>(r: pg.QueryResult): Result<Row> => ({ rows: r.rows as Row[], rowCount: r.rowCount ?? 0 });
