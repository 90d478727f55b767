// What every table file shares: the `herald` schema, column types and the rule for names.
import { sql, type AnyColumn } from 'drizzle-orm';
import { customType, pgSchema, timestamp } from 'drizzle-orm/pg-core';
import { MAX_NAME_LENGTH } from '../defaults.ts';

export const herald = pgSchema('herald');

// xid8: the writing transaction's id, which orders the event feed (see queue/sql/feed.ts).
export const xid8 = customType<{ data: string }>({ dataType: () => 'xid8' });

export const tstz = <Name extends string>(name: Name) => timestamp(name, { withTimezone: true, mode: 'date' });

// Names are 1-128 of [A-Za-z0-9_.:-] (safe in URLs, NOTIFY payloads and logs); the database enforces it
// as well as the HTTP schema, so no writer can store another.
export const NAME_CHARS = '[A-Za-z0-9_.:-]';

// The database's test of a name: the length apart from the characters. PostgreSQL runs every CHECK
// on every UPDATE of a row, claims and completions included, and a bounded repetition ({1,128})
// builds 128 regex states that each test walks again: about 3 µs a name against 0.4 for this.
export const validName = (col: AnyColumn) =>
  sql`length(${col}) <= ${sql.raw(String(MAX_NAME_LENGTH))} AND ${col} ~ ${sql.raw(`'^${NAME_CHARS}+$'`)}`;
