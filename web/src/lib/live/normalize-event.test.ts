// Unit tests for normalizing server events and comparing ids (normalize-event.ts, ids.ts): no browser, no server.

import { describe, expect, it } from 'vitest';
import { compareIds } from './ids';
import { normalizeEvent } from './normalize-event';

describe('normalizeEvent and ids', () => {
  it('accepts `id` for `eventId` and numbers for ids', () => {
    const e = normalizeEvent({ id: 7, jobId: 42, type: 'claimed', status: 'running', attempt: 1, at: 'x', data: { lagMs: 3 } });
    expect(e?.eventId).toBe('7');
    expect(e?.jobId).toBe('42');
    expect(normalizeEvent({ nope: true })).toBeNull();
  });
  it('keeps text fields as text: missing ones empty, odd ones as JSON, data only when an object', () => {
    const e = normalizeEvent({ eventId: '1', jobId: '2', type: 'enqueued', status: 'queued', kind: { odd: 1 }, data: 'x' });
    expect(e?.queue).toBe('');
    expect(e?.kind).toBe('{"odd":1}');
    expect(e?.data).toBeNull();
  });
  it('compares digit ids numerically', () => {
    expect(compareIds('9', '10')).toBeLessThan(0);
    expect(compareIds('100', '99')).toBeGreaterThan(0);
    expect(compareIds('42', '42')).toBe(0);
  });
});
