// Normalising what the server sends. `/api/jobs/:id/events` rows may name the id `id` rather
// than `eventId`; ids may arrive as numbers. The board works with strings throughout.
import { asText } from '../format';
import type { BoardEvent, EventType, JobStatus } from '../types';

export function normalizeEvent(raw: unknown): BoardEvent | null {
  if (!raw || typeof raw !== 'object') return null;
  const r = raw as Record<string, unknown>;
  const eventId = r.eventId ?? r.id;
  const jobId = r.jobId ?? r.job_id;
  if (eventId == null || jobId == null || typeof r.type !== 'string') return null;
  return {
    eventId: asText(eventId),
    jobId: asText(jobId),
    queue: asText(r.queue),
    kind: asText(r.kind),
    type: r.type as EventType,
    status: r.status as JobStatus,
    attempt: typeof r.attempt === 'number' ? r.attempt : Number(r.attempt ?? 0),
    worker: (r.worker as string | null) ?? null,
    at: asText(r.at ?? new Date().toISOString()),
    data: r.data && typeof r.data === 'object' ? (r.data as Record<string, unknown>) : null,
    flowId: r.flowId == null ? null : asText(r.flowId),
  };
}
