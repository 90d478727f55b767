// What the routes share: the core, the event stream and the metrics registry.
import type { Registry } from 'prom-client';
import type { Queue } from '../queue/queue.ts';
import type { ReadReplica } from '../queue/replica.ts';
import type { EventHub } from './stream/hub.ts';
import type { AlertWatch } from './alerts.ts';

export interface ServerContext {
  /** The primary: writes, and reads whose reply must show the caller's own write. */
  queue: Queue;
  /**
   * Reads that may lag a little (lists, search, job and flow pages, history): the read replica
   * while it is usable (HERALD_READ_URL, docs/replicas.md), else the primary; `queue` itself without one.
   */
  reads: Queue;
  /** The read replica, when HERALD_READ_URL is set (its lag for health and metrics). */
  replica?: ReadReplica;
  hub: EventHub;
  metrics: Registry;
  /** The alert conditions as this server sees them (GET /api/alerts). */
  alerts: AlertWatch;
  /** Aborts when the server begins to close: held `?wait` replies answer at once. */
  closing: AbortSignal;
}
