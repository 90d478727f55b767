// The public surface of Herald's core, for the server, the worker and in-process producers.
export { Queue, toErrorInfo } from './queue.ts';
export type { EnqueueInput, Enqueued, Lease, ClaimRequest, QueueCount, QueueOptions, ErrorInfo, Actor, JobPage, BulkResult, ListOptions } from './queue.ts';
export type { JobFilter } from './search.ts';
export type { HistoryBucket, HistoryRange } from './history.ts';
export { BULK_ACTIONS, type BulkAction } from './defaults.ts';
export type { Job, JobEvent, JobProgress, WaitingFor } from './job.ts';
export { HeraldError, ValidationError, NotFoundError, ConflictError } from './errors.ts';
export { parseCursor, formatCursor, compareCursor, START, type Cursor } from './cursor.ts';
export { openDatabase, createPool, inTransaction, type Database } from './database.ts';
export { migrate } from './migrate.ts';
export { Listener, type ListenerState } from './listener.ts';
export { JOBS_CHANNEL, EVENTS_CHANNEL, CONTROL_CHANNEL, parseJobsPayload } from './channels.ts';
export { loadConfig, type HeraldConfig } from './config.ts';
export { createLogger, type Logger } from './log.ts';
export { JOB_STATUSES, EVENT_TYPES, type JobStatus, type EventType } from './schema/index.ts';
