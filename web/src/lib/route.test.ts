// Unit tests for hash routes (route.ts): no browser, no server.

import { describe, expect, it } from 'vitest';
import { flowHref, href, parseHash } from './route';

describe('routes', () => {
  it('parses hash routes', () => {
    expect(parseHash('')).toEqual({ name: 'overview' });
    expect(parseHash('#/jobs?queue=a&status=failed')).toEqual({ name: 'jobs', query: { queue: 'a', status: 'failed' } });
    expect(parseHash('#/jobs/42')).toEqual({ name: 'job', id: '42' });
    expect(parseHash('#/health')).toEqual({ name: 'health' });
    expect(parseHash('#/flows?status=failed')).toEqual({ name: 'flows', query: { status: 'failed' } });
    expect(parseHash('#/flows/7')).toEqual({ name: 'flow', id: '7' });
    expect(flowHref('7')).toBe('#/flows/7');
    expect(parseHash('#/nope')).toEqual({ name: 'notfound', path: '/nope' });
    expect(href('/jobs', { queue: 'a', status: '' })).toBe('#/jobs?queue=a');
  });
});
