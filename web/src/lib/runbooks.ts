// The alerts' runbooks, for the Health page: each alert's section of docs/alerts.md (the page its
// runbook field names), taken into the board at build time, so what to do is one click away
// without leaving the board.
import doc from '../../../docs/alerts.md?raw';

/** The runbook sections by anchor ("heraldnoworker"): their heading and paragraphs. */
const SECTIONS = new Map<string, { title: string; paragraphs: string[] }>();
for (const part of doc.split(/^### /m).slice(1)) {
  const [title, ...rest] = part.split('\n');
  const body = rest.join('\n').split(/^## /m)[0];
  const paragraphs = body.split(/\n\s*\n/).map((p) => p.replace(/\s*\n\s*/g, ' ').trim()).filter(Boolean);
  SECTIONS.set(title.trim().toLowerCase(), { title: title.trim(), paragraphs });
}

/** The runbook a `runbook` field (docs/alerts.md#heraldnoworker) points at, or null. */
export function runbookOf(runbook: string): { anchor: string; title: string; paragraphs: string[] } | null {
  const anchor = runbook.split('#')[1] ?? '';
  const section = SECTIONS.get(anchor);
  return section ? { anchor, ...section } : null;
}

/** A paragraph of the runbook as pieces: plain text, and `code` spans shown as code. */
export function inlineCode(paragraph: string): { code: boolean; text: string }[] {
  return paragraph
    .replace(/\[([^\]]+)\]\([^)]+\)/g, '$1')
    .split('`')
    .map((text, i) => ({ code: i % 2 === 1, text }))
    .filter((p) => p.text !== '');
}
