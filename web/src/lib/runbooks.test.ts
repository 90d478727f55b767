// Every alert the server can raise has its runbook in the board (docs/alerts.md, taken in at build time).
import { describe, expect, it } from 'vitest';
import { ALERT_NAMES, runbookOf as runbookField } from '../../../queue/alerts';
import { inlineCode, runbookOf } from './runbooks';

describe('runbooks', () => {
  it('finds the section of every alert, as prose', () => {
    for (const name of ALERT_NAMES) {
      const r = runbookOf(runbookField(name));
      expect(r, name).not.toBeNull();
      expect(r!.title).toBe(name);
      expect(r!.paragraphs.length, name).toBeGreaterThan(0);
      expect(r!.paragraphs.join(' '), name).not.toMatch(/\n|^#/);
    }
    expect(runbookOf('docs/alerts.md#nothing')).toBeNull();
  });

  it('shows `code` as code and a link as its text', () => {
    expect(inlineCode('start one (`npx herald worker`), see [replicas](replicas.md).')).toEqual([
      { code: false, text: 'start one (' },
      { code: true, text: 'npx herald worker' },
      { code: false, text: '), see replicas.' },
    ]);
  });
});
