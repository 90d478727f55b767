// What every table file shares: the `herald` schema, column types and the rule for names.
import { customType, pgSchema, timestamp } from 'drizzle-orm/pg-core';

export const herald = pgSchema('herald');

// xid8: the writing transaction's id, which orders the event feed (see queue/sql/feed.ts).
export const xid8 = customType<{ data: string }>({ dataType: () => 'xid8' });

export const tstz = <Name extends string>(name: Name) => timestamp(name, { withTimezone: true, mode: 'date' });

// Names are 1-128 of [A-Za-z0-9_.:-] (safe in URLs, NOTIFY payloads and logs); the database enforces it
// as well as the HTTP schema, so no writer can store another.
export const NAME_CHARS = '[A-Za-z0-9_.:-]{1,128}';
export const NAME_PATTERN = `'^${NAME_CHARS}$'`;
