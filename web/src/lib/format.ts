// Formatting helpers: times, durations, numbers.

const pad = (n: number, w = 2) => String(n).padStart(w, '0');

/** "18:04:05" today, "11-28 18:04:05" on other days, "—" for none. */
export function fmtTime(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return '—';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return String(iso);
  const t = `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
  const today = new Date(now);
  if (d.toDateString() === today.toDateString()) return t;
  if (d.getFullYear() === today.getFullYear()) return `${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${t}`;
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${t}`;
}

/** "18:04:05.123", for event timelines. */
export function fmtTimeMs(iso: string | null | undefined): string {
  if (!iso) return '—';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return String(iso);
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`;
}

/** Full local date and time ("2026-12-01 07:26:50"), for tooltips. */
export function fmtDateTime(iso: string | null | undefined): string {
  if (!iso) return '';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return String(iso);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/**
 * An error message for a table cell: its first line, without the "Error: " every thrown Error
 * starts with. When still too long, the middle goes: the end is what names the cause
 * ("… failed: 503 Service Unavailable").
 */
export function shortError(message: string, max = 90): string {
  const line = (message.split('\n').find((l) => l.trim()) ?? '').trim().replace(/^(?:Error:\s*)+/, '');
  if (line.length <= max) return line;
  const tail = Math.floor(max * 0.6);
  return `${line.slice(0, max - tail - 1).trimEnd()}…${line.slice(-tail).trimStart()}`;
}

export function fmtDuration(ms: number | null | undefined): string {
  if (ms == null || !Number.isFinite(ms)) return '—';
  const a = Math.abs(ms);
  if (a < 1000) return `${Math.round(ms)} ms`;
  if (a < 60_000) return `${(ms / 1000).toFixed(a < 10_000 ? 1 : 0)} s`;
  if (a < 3_600_000) return `${Math.floor(a / 60_000)}m ${Math.floor((a % 60_000) / 1000)}s`;
  if (a < 86_400_000) return `${Math.floor(a / 3_600_000)}h ${Math.floor((a % 3_600_000) / 60_000)}m`;
  return `${Math.floor(a / 86_400_000)}d ${Math.floor((a % 86_400_000) / 3_600_000)}h`;
}

/** "12s ago" / "in 4s". */
export function fmtRelative(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return '—';
  const t = Date.parse(iso);
  if (!Number.isFinite(t)) return String(iso);
  const diff = t - now;
  if (Math.abs(diff) < 1000) return 'now';
  return diff < 0 ? `${fmtDuration(-diff)} ago` : `in ${fmtDuration(diff)}`;
}

const nf = new Intl.NumberFormat('en-US');
export function fmtNumber(n: number | null | undefined): string {
  return n == null || !Number.isFinite(n) ? '—' : nf.format(n);
}

export function fmtRate(n: number): string {
  if (n === 0) return '0';
  if (n < 10) return n.toFixed(1);
  return nf.format(Math.round(n));
}

/** Payloads, results and errors as text, never as HTML. */
export function toJson(x: unknown): string {
  if (x === undefined) return '';
  try {
    return JSON.stringify(x, null, 2) ?? '';
  } catch {
    // A cycle or a BigInt; what the server sends is JSON, so neither comes from there.
    return Object.prototype.toString.call(x);
  }
}

/** A value from the server as one line of text: strings as they are, numbers printed, the rest as JSON. */
export function asText(x: unknown): string {
  if (typeof x === 'string') return x;
  if (typeof x === 'number' || typeof x === 'boolean' || typeof x === 'bigint') return x.toString();
  if (x === null || x === undefined) return '';
  return JSON.stringify(x) ?? '';
}

/**
 * Who made a manual change, in plain words: "alice (admin)" for a labelled token, "an admin token"
 * for one without a label, "someone (auth is off)" when the server checks no tokens.
 */
export function fmtActor(by: { role: string | null; label?: string }): string {
  if (by.role === null) return 'someone (auth is off)';
  if (by.label) return `${by.label} (${by.role})`;
  return `${/^[aeiou]/i.test(by.role) ? 'an' : 'a'} ${by.role} token`;
}
