// The schemas of GET /api/health (routes/health.ts).
import { Type, type Static } from 'typebox';
import { DateTime, Nullable, OneOf } from '../schemas.ts';

const streamHolder = Type.Object(
  {
    xid: Type.String(),
    pid: Nullable(Type.Integer()),
    applicationName: Nullable(Type.String()),
    state: Nullable(Type.String(), { description: "pg_stat_activity's state, or 'prepared' for a prepared transaction" }),
    gid: Nullable(Type.String(), { description: 'a prepared transaction’s name' }),
    transactionStart: Nullable(DateTime()),
    queryStart: Nullable(DateTime()),
    ageMs: Nullable(Type.Number()),
  },
);

/** The reply, 200 or 503 alike: the board and probes read the same fields. */
export const healthReply = Type.Object({
  ok: Type.Boolean(),
  db: OneOf(['up', 'down']),
  listener: OneOf(['up', 'down', 'polling', 'connecting']),
  streamLagMs: Nullable(Type.Number()),
  replica: Nullable(
    Type.Object({
      up: Type.Boolean({ description: 'the replica answered the last statement sent to it' }),
      lagMs: Type.Number({ description: 'age of the oldest write of the primary it has not replayed (grows while it is down)' }),
      maxLagMs: Type.Number({ description: 'HERALD_READ_MAX_LAG_MS' }),
      reading: OneOf(['replica', 'primary'], { description: 'where the stream and the board read now' }),
    }),
    { description: 'The read replica (HERALD_READ_URL); null without one' },
  ),
  streamHeldBy: Nullable(streamHolder, {
    description:
      'The open transaction of this database that holds the event stream back (events committed after it wait until it ends), once it has been open 1 s; null when none does',
  }),
  tables: Type.Array(
    Type.Object({
      name: Type.String(),
      liveTuples: Type.Number(),
      deadTuples: Type.Number(),
      lastAutovacuum: Nullable(DateTime()),
      lastVacuum: Nullable(DateTime()),
    }),
  ),
});

export type Health = Static<typeof healthReply>;

/** No parameters; like every route, it refuses ones it does not know. */
export const healthQuery = Type.Object({}, { additionalProperties: false });
