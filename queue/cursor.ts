// The stream cursor: the (tx, id) pair of the last event seen, written "TX.ID". "0" means
// the beginning. It is opaque to clients; only the server parses it.
import { ValidationError } from './errors.ts';

export interface Cursor {
  tx: string;
  id: string;
}

export const START: Cursor = { tx: '0', id: '0' };

export const formatCursor = (c: Cursor) => `${c.tx}.${c.id}`;

export function parseCursor(raw: string): Cursor {
  const s = raw.trim();
  if (s === '0') return START;
  const m = /^(\d{1,20})\.(\d{1,19})$/.exec(s);
  if (!m || BigInt(m[1]) > 0xffffffffffffffffn || BigInt(m[2]) > 0x7fffffffffffffffn) {
    throw new ValidationError(`Last-Event-ID "${s.slice(0, 60)}" is not a cursor this server issued; reconnect without it (live) or with 0 (from the beginning)`, 'HERALD_INVALID_CURSOR');
  }
  return { tx: m[1], id: m[2] };
}

export function compareCursor(a: Cursor, b: Cursor): number {
  const tx = BigInt(a.tx) - BigInt(b.tx);
  if (tx !== 0n) return tx < 0n ? -1 : 1;
  const id = BigInt(a.id) - BigInt(b.id);
  return id === 0n ? 0 : id < 0n ? -1 : 1;
}
