import { describe, expect, it } from 'vitest';
import { bulkQuestion, filterFromQuery, isoToLocal, isSearch, localToIso } from './search';

describe('jobs search filters', () => {
  it('reads every filter from the URL query, empty when absent', () => {
    const f = filterFromQuery({ queue: 'billing', payload: '{"customer":42}', limit: '25' });
    expect(f).toEqual({ queue: 'billing', status: '', kind: '', flow: '', waitingFor: '', group: '', tag: '', payload: '{"customer":42}', error: '', createdAfter: '', createdBefore: '' });
    expect(isSearch(filterFromQuery({ tag: 'vip' }))).toBe(true);
    expect(isSearch(f)).toBe(true);
    expect(isSearch(filterFromQuery({ queue: 'billing', status: 'failed' }))).toBe(false);
    // A flow is followed live from the stream's events: not a search.
    expect(isSearch(filterFromQuery({ flow: '7' }))).toBe(false);
    // Nor is a wait: its sleeping / waiting events say it.
    expect(filterFromQuery({ waitingFor: 'signal' }).waitingFor).toBe('signal');
    expect(isSearch(filterFromQuery({ waitingFor: 'signal' }))).toBe(false);
  });

  it('converts between datetime-local values and ISO times', () => {
    const iso = localToIso('2030-05-06T07:08');
    expect(new Date(iso).getTime()).toBe(new Date(2030, 4, 6, 7, 8).getTime());
    expect(isoToLocal(iso)).toBe('2030-05-06T07:08');
    expect(localToIso('')).toBe('');
    expect(localToIso('nonsense')).toBe('');
    expect(isoToLocal(undefined)).toBe('');
  });

  it('asks the bulk question in words', () => {
    expect(bulkQuestion('retry', 1204, { queue: 'billing', status: 'failed' })).toBe('retry 1,204 failed jobs in queue billing?');
    expect(bulkQuestion('cancel', 1, { queue: 'mail' })).toBe('cancel 1 job in queue mail?');
    expect(bulkQuestion('run_now', 3, { queue: 'mail', status: 'scheduled' })).toBe('run now 3 scheduled jobs in queue mail?');
    expect(bulkQuestion('cancel', 2, { flow: '7' })).toBe('cancel 2 jobs (flow #7)?');
    expect(bulkQuestion('delete', 3, { status: 'succeeded', payload: '{"a":1}' })).toBe('delete 3 succeeded jobs (payload ⊇ {"a":1})?');
  });
});
