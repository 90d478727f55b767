// The tables, as drizzle sees them: `npm run db:generate` turns what this file exports into the
// table migration in drizzle/; triggers and functions are in the hand-written migrations.
export { herald } from './base.ts';
export * from './jobs.ts';
export * from './events.ts';
export * from './stats.ts';
export * from './flows.ts';
export * from './queues.ts';
export * from './workers.ts';
export * from './schedules.ts';
export * from './durable.ts';
