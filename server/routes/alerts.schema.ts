// The schemas of GET /api/alerts (routes/alerts.ts).
import { Type } from 'typebox';
import { ALERT_NAMES } from '../../queue/alerts.ts';
import { Nullable, OneOf } from '../schemas.ts';

export const alertsQuery = Type.Object({}, { additionalProperties: false });

/** The conditions of ops/prometheus/alerts.yml that hold now, as this server sees them. */
export const alertsReply = Type.Object({
  alerts: Type.Array(
    Type.Object({
      alert: OneOf(ALERT_NAMES),
      queue: Nullable(Type.String(), { description: 'the queue it is about; null for the whole system' }),
      summary: Type.String(),
      runbook: Type.String({ description: 'the docs section that says what to do (docs/alerts.md#ALERT)' }),
    }),
  ),
});
