// What the routes share: the core, the event stream and the metrics registry.
import type { Registry } from 'prom-client';
import type { Queue } from '../queue/queue.ts';
import type { EventHub } from './stream/hub.ts';
import type { AlertWatch } from './alerts.ts';

export interface ServerContext {
  queue: Queue;
  hub: EventHub;
  metrics: Registry;
  /** The alert conditions as this server sees them (GET /api/alerts). */
  alerts: AlertWatch;
  /** Aborts when the server begins to close: held `?wait` replies answer at once. */
  closing: AbortSignal;
}
