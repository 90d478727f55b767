// The relative links of Markdown files, checked the way GitHub renders them: a link's file must
// exist, and its #anchor must be the slug of a heading in that file (or an <a id>/<a name>).
// Links in code (fenced blocks, `spans`) are text, not links, and are left alone.
import path from 'node:path';

/** What the checker may look at: paths relative to the repository's root, with '/'. */
export interface MarkdownTree {
  exists(file: string): boolean;
  read(file: string): string;
}

/** GitHub's heading slug (github-slugger): lower case, punctuation dropped but '-' and '_', each space a '-'. */
export function slug(heading: string): string {
  return heading.toLowerCase().replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, '').replace(/ /g, '-');
}

/** The lines outside fenced code blocks, with their numbers (from 1). */
function prose(markdown: string): { text: string; line: number }[] {
  const out: { text: string; line: number }[] = [];
  let fence: string | undefined;
  markdown.split('\n').forEach((text, i) => {
    // A fence may be indented (inside a list item); it closes with a bare fence as long, of its character.
    const marker = (fence ? /^\s*(`{3,}|~{3,})\s*$/ : /^\s*(`{3,}|~{3,})/).exec(text)?.[1];
    if (marker && (!fence || (marker[0] === fence[0] && marker.length >= fence.length))) {
      fence = fence ? undefined : marker;
      return;
    }
    if (!fence) out.push({ text, line: i + 1 });
  });
  return out;
}

const withoutCode = (text: string) => text.replace(/(`+)[\s\S]*?\1/g, '');

/** A heading as GitHub renders its text: links become their text; code marks, emphasis and tags go. */
const headingText = (raw: string) =>
  raw
    .replace(/\s+#+\s*$/, '')
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/<[^>]+>/g, '')
    .replace(/[`*]/g, '')
    .trim();

/** Every anchor a file offers: its headings' slugs (a repeated one gets -1, -2, ...) and explicit ids. */
export function anchors(markdown: string): Set<string> {
  const found = new Set<string>();
  const seen = new Map<string, number>();
  for (const { text } of prose(markdown)) {
    const heading = /^\s{0,3}#{1,6}\s+(.*)$/.exec(text);
    if (heading) {
      const base = slug(headingText(heading[1]));
      const n = seen.get(base) ?? 0;
      seen.set(base, n + 1);
      found.add(n === 0 ? base : `${base}-${n}`);
    }
    for (const m of text.matchAll(/<a\s[^>]*\b(?:id|name)="([^"]+)"/g)) found.add(m[1]);
  }
  return found;
}

/** Every link target of a file with its line: inline links and images, reference definitions, href/src. */
function links(markdown: string): { target: string; line: number }[] {
  const out: { target: string; line: number }[] = [];
  for (const { text, line } of prose(markdown)) {
    const plain = withoutCode(text);
    for (const m of plain.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) out.push({ target: m[1], line });
    const definition = /^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/.exec(plain);
    if (definition) out.push({ target: definition[1], line });
    for (const m of plain.matchAll(/\b(?:href|src)="([^"]+)"/g)) out.push({ target: m[1], line });
  }
  return out;
}

/**
 * Whether `target` (a link written in `from`, or a bare "file#anchor" from the root when `from` is
 * undefined) resolves; undefined when it does, else why not. Links with a scheme are not ours to check.
 */
export function unresolved(tree: MarkdownTree, target: string, from?: string): string | undefined {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target)) return undefined;
  const hash = target.indexOf('#');
  const file = decodeURI(hash < 0 ? target : target.slice(0, hash));
  const anchor = hash < 0 ? undefined : decodeURIComponent(target.slice(hash + 1));
  const dir = from ? path.posix.dirname(from) : '.';
  const resolved = file === '' ? (from ?? '') : path.posix.normalize(file.startsWith('/') ? file.slice(1) : path.posix.join(dir, file));
  if (resolved === '' || resolved.startsWith('../')) return `${file || target} is outside the repository`;
  if (!tree.exists(resolved)) return `${resolved} does not exist`;
  if (anchor === undefined) return undefined;
  if (!resolved.endsWith('.md')) return `an anchor into ${resolved}, which is not Markdown`;
  return anchors(tree.read(resolved)).has(anchor) ? undefined : `${resolved} has no heading #${anchor}`;
}

/** Every broken link of the given Markdown files, one line each ("file:line: target: why"). */
export function brokenLinks(tree: MarkdownTree, files: readonly string[]): string[] {
  const broken: string[] = [];
  for (const file of files) {
    for (const { target, line } of links(tree.read(file))) {
      const why = unresolved(tree, target, file);
      if (why) broken.push(`${file}:${line}: ${target}: ${why}`);
    }
  }
  return broken;
}
