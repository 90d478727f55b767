// The alerts of ops/prometheus/alerts.yml as the API names them (GET /api/alerts); the server
// computes them (server/alerts.ts) with the thresholds of defaults.ts.
import type { JobEvent } from './job.ts';

export const ALERT_NAMES = ['HeraldJobsFailing', 'HeraldQueueStalled', 'HeraldNoWorker', 'HeraldStreamHeld', 'HeraldWorkersDying', 'HeraldReplicaLagging'] as const;
export type AlertName = (typeof ALERT_NAMES)[number];

export interface Alert {
  alert: AlertName;
  /** The queue it is about; null for the whole system. */
  queue: string | null;
  summary: string;
  /** The docs section that says what to do (runbookOf). */
  runbook: string;
}

/** An alert's runbook: its section of docs/alerts.md, the page the Prometheus rules link too. */
export const runbookOf = (alert: AlertName): string => `docs/alerts.md#${alert.toLowerCase()}`;

/** An event of a job that failed for good: a worker's last failure, or the reaper's last lease expiry. */
export const isFinalFailure = (e: Pick<JobEvent, 'type' | 'status'>) => e.status === 'failed' && (e.type === 'failed' || e.type === 'lease_expired');
