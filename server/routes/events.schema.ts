// The schemas of GET /api/events (routes/events.ts).
import { Type } from 'typebox';
import { DEFAULTS } from '../../queue/defaults.ts';
import { JobEvent, JobId, Name, Ref } from '../schemas.ts';

const CURSOR_MAX = 64;

export const eventsQuery = Type.Object(
  {
    queue: Type.Optional(Name('only events of this queue')),
    job: Type.Optional(JobId('only events of this job')),
    flow: Type.Optional(JobId('only events of this flow')),
    lastEventId: Type.Optional(
      Type.String({ maxLength: CURSOR_MAX, description: 'resume after this cursor (the Last-Event-ID header wins); 0 = from the beginning' }),
    ),
    token: Type.Optional(Type.String({ description: 'the API token, for EventSource (which cannot set headers)' })),
  },
  { additionalProperties: false },
);

export const eventsHeaders = Type.Object({ 'last-event-id': Type.Optional(Type.String({ maxLength: CURSOR_MAX })) });

/** GET /api/events/recent: what a page shows before live events come. */
export const recentEventsQuery = Type.Object(
  {
    queue: Type.Optional(Name('only events of this queue')),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: DEFAULTS.recentEventsMax, default: DEFAULTS.recentEventsMax })),
  },
  { additionalProperties: false },
);

export const recentEvents = Type.Object(
  { events: Type.Array(Ref(JobEvent), { description: 'newest first' }) },
  { description: 'the newest events the stream has published' },
);
