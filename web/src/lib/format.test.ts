import { describe, expect, it } from 'vitest';
import { shortError } from './format';

describe('shortError (error text in table rows)', () => {
  it('keeps a short message whole, without the Error: prefix, first line only', () => {
    expect(shortError('Error: upstream answered 503\n    at send (mail.ts:3:9)')).toBe('upstream answered 503');
  });

  it('cuts the middle of a long message, so the cause at the end stays', () => {
    const msg = 'request to https://payments.example.com/v1/customers/cus_123456789/charges/ch_987654321 failed: 503 Service Unavailable';
    const s = shortError(msg, 60);
    expect(s.length).toBeLessThanOrEqual(60);
    expect(s).toMatch(/^request to https:/);
    expect(s).toMatch(/failed: 503 Service Unavailable$/);
  });
});
