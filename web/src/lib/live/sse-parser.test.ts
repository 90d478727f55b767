// Unit tests for reading server-sent events from text in pieces (sse-parser.ts): no browser, no server.

import { describe, expect, it } from 'vitest';
import { SseParser } from './sse-parser';

const STREAM = 'id: 1.1\nevent: job\ndata: {"a":1}\n\n: heartbeat\n\nid: 1.2\r\nevent: job\r\ndata: {"a":2}\r\n\r\nevent: reset\rdata: {"removedThrough":"5.0"}\r\rdata:plain\ndata: two\n\n';
const WANT = [
  { type: 'job', data: '{"a":1}', lastEventId: '1.1' },
  { type: 'job', data: '{"a":2}', lastEventId: '1.2' },
  { type: 'reset', data: '{"removedThrough":"5.0"}', lastEventId: '1.2' },
  { type: 'message', data: 'plain\ntwo', lastEventId: '1.2' },
];

describe('SseParser', () => {
  it('reads ids, types and data with LF, CRLF and CR line ends, skipping comments', () => {
    expect(new SseParser().push(STREAM)).toEqual(WANT);
  });

  // Catches the held CR dropped (a CRLF split across pieces then ends two lines: an empty one
  // dispatches early) and the unfinished line not kept for the next piece.
  it('gives the same messages whatever the pieces', () => {
    for (let size = 1; size <= 7; size++) {
      const p = new SseParser();
      const got = [];
      for (let i = 0; i < STREAM.length; i += size) got.push(...p.push(STREAM.slice(i, i + size)));
      expect(got, `pieces of ${size}`).toEqual(WANT);
    }
  });

  it('dispatches nothing for a block without data, and keeps an unfinished message', () => {
    const p = new SseParser();
    expect(p.push('id: 7\n\nevent: job\ndata: x')).toEqual([]);
    expect(p.push('\n\n')).toEqual([{ type: 'job', data: 'x', lastEventId: '7' }]);
  });
});
