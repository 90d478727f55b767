// Unit tests for hash routes (route.ts): no browser, no server.

import { describe, expect, it } from 'vitest';
import { href, parseHash } from './route';

describe('routes', () => {
  it('parses hash routes', () => {
    expect(parseHash('')).toEqual({ name: 'overview' });
    expect(parseHash('#/jobs?queue=a&status=failed')).toEqual({ name: 'jobs', query: { queue: 'a', status: 'failed' } });
    expect(parseHash('#/jobs/42')).toEqual({ name: 'job', id: '42' });
    expect(parseHash('#/health')).toEqual({ name: 'health' });
    expect(parseHash('#/nope')).toEqual({ name: 'notfound', path: '/nope' });
    expect(href('/jobs', { queue: 'a', status: '' })).toBe('#/jobs?queue=a');
  });
});
