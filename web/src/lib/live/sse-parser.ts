// Server-sent events from text as it arrives, in whatever pieces the network gives: the parsing
// half of an EventSource (fields id, event, data; comments and retry ignored), for a stream read
// with fetch, whose pieces the board can then dispatch a few at a time.

export interface SseMessage {
  /** The `event:` field, `message` when none. */
  type: string;
  data: string;
  /** The last `id:` seen on the stream so far, as EventSource's lastEventId. */
  lastEventId: string;
}

export class SseParser {
  #rest = '';
  #type = '';
  #data: string[] = [];
  #lastEventId = '';

  /** The messages completed by `text`; an unfinished line waits for the next piece. */
  push(text: string): SseMessage[] {
    const out: SseMessage[] = [];
    let buf = this.#rest + text;
    // A CR at the very end may be the first half of a CRLF: keep it until the next piece.
    const held = buf.endsWith('\r') ? '\r' : '';
    if (held) buf = buf.slice(0, -1);
    let start = 0;
    // Each kind of line end is searched for again only once passed: a piece with no CR at all
    // (the usual case) must not be scanned to its end for one at every line.
    let lf = buf.indexOf('\n');
    let cr = buf.indexOf('\r');
    for (;;) {
      if (lf !== -1 && lf < start) lf = buf.indexOf('\n', start);
      if (cr !== -1 && cr < start) cr = buf.indexOf('\r', start);
      const end = lf === -1 ? cr : cr === -1 ? lf : Math.min(lf, cr);
      if (end === -1) break;
      this.#line(buf.slice(start, end), out);
      start = end + (buf[end] === '\r' && buf[end + 1] === '\n' ? 2 : 1);
    }
    this.#rest = buf.slice(start) + held;
    return out;
  }

  #line(line: string, out: SseMessage[]): void {
    if (line === '') {
      if (this.#data.length) out.push({ type: this.#type || 'message', data: this.#data.join('\n'), lastEventId: this.#lastEventId });
      this.#type = '';
      this.#data = [];
      return;
    }
    if (line.startsWith(':')) return; // a comment (the server's heartbeat)
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') this.#data.push(value);
    else if (field === 'event') this.#type = value;
    else if (field === 'id' && !value.includes('\0')) this.#lastEventId = value;
  }
}
