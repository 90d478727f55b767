// The documentation's links (no database): every relative link and #anchor of every Markdown file
// of the repository resolves as GitHub renders it, the alert runbooks point at a real section, and
// the README stays a front door (short, with its first job near the top).
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ALERT_NAMES, runbookOf } from '../queue/alerts.ts';
import { anchors, brokenLinks, slug, unresolved, type MarkdownTree } from './support/markdown-links.ts';

const ROOT = path.resolve(import.meta.dirname, '..');
const repo: MarkdownTree = {
  exists: (file) => existsSync(path.join(ROOT, file)),
  read: (file) => readFileSync(path.join(ROOT, file), 'utf8'),
};
// Tracked files and new ones not ignored, so a page is checked before its first commit too.
const markdownFiles = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '--', '*.md'], { cwd: ROOT, encoding: 'utf8' })
  .split('\n')
  .filter((f) => f !== '' && repo.exists(f));

describe('the Markdown of the repository', () => {
  it('has only links that resolve: each file exists, each anchor is a heading of its file', () => {
    expect(markdownFiles).toEqual(expect.arrayContaining(['README.md', 'web/README.md', 'docs/api.md', 'docs/alerts.md', 'docs/benchmark.md', 'docs/internals.md', 'docs/operations.md', 'docs/code-map.md']));
    expect(brokenLinks(repo, markdownFiles)).toEqual([]);
  });

  it('keeps the README a front door: at most 500 lines, the quick start\'s first curl within the first 80', () => {
    const lines = repo.read('README.md').split('\n');
    expect(lines.length).toBeLessThanOrEqual(500);
    const quickStart = lines.findIndex((l) => /^## Quick start/.test(l));
    expect(quickStart).toBeGreaterThan(0);
    const firstCurl = lines.findIndex((l, i) => i > quickStart && /\bcurl\b/.test(l));
    expect(firstCurl).toBeGreaterThan(quickStart);
    expect(firstCurl + 1).toBeLessThanOrEqual(80);
    expect(lines[firstCurl]).toContain('/api/jobs');
  });
});

describe('the alert runbooks', () => {
  it('that GET /api/alerts names are sections of the docs', () => {
    for (const name of ALERT_NAMES) expect(unresolved(repo, runbookOf(name)), name).toBeUndefined();
  });

  it('that the Prometheus rules and their tests name are sections of the docs', () => {
    for (const file of ['ops/prometheus/alerts.yml', 'ops/prometheus/alerts.test.yml']) {
      const runbooks = [...repo.read(file).matchAll(/runbook: "([^"]+)"/g)].map((m) => m[1]);
      expect(runbooks.length, file).toBeGreaterThanOrEqual(ALERT_NAMES.length);
      for (const runbook of runbooks) expect(unresolved(repo, runbook), `${file}: ${runbook}`).toBeUndefined();
    }
  });
});

describe('the link checker', () => {
  // A fixture tree: if the checker stopped reading anchors or files, the broken links would pass.
  const files: Record<string, string> = {
    'a.md': [
      '# Top',
      'See [here](#top), [b](sub/b.md), [its section](sub/b.md#yes-its-here), [the second](sub/b.md#twice-1).',
      'Broken: [no such heading](sub/b.md#nope), [no such file](missing.md), [not ours](https://example.com/x#y).',
      '`[in code](gone.md)` is text, and so is this:',
      '```md',
      '[in a fence](gone.md)',
      '```',
      '![a picture](sub/pic.png) and [an anchor in a picture](sub/pic.png#x)',
      '[ref]: sub/b.md#twice',
    ].join('\n'),
    'sub/b.md': ['## Yes, it\'s here!', '### Twice', '### Twice', 'Back [up](../a.md#top), [out](../../c.md).'].join('\n'),
    'sub/pic.png': '',
  };
  const tree: MarkdownTree = { exists: (f) => f in files || f === 'sub', read: (f) => files[f] };

  it('reports the missing file, the missing heading, an anchor into a picture and a link outside, and nothing else', () => {
    expect(brokenLinks(tree, ['a.md', 'sub/b.md'])).toEqual([
      'a.md:3: sub/b.md#nope: sub/b.md has no heading #nope',
      'a.md:3: missing.md: missing.md does not exist',
      'a.md:8: sub/pic.png#x: an anchor into sub/pic.png, which is not Markdown',
      'sub/b.md:4: ../../c.md: ../../c.md is outside the repository',
    ]);
  });

  it('slugs headings as GitHub does', () => {
    expect(slug('Search, bulk actions and queue history')).toBe('search-bulk-actions-and-queue-history');
    expect(slug('Commit durability (HERALD_ASYNC_COMMIT)')).toBe('commit-durability-herald_async_commit');
    expect(slug('Quick start: your first job')).toBe('quick-start-your-first-job');
    expect([...anchors('## The `herald_jobs` channel\n## [Linked](x.md) *now*\n# A\n# A')]).toEqual(['the-herald_jobs-channel', 'linked-now', 'a', 'a-1']);
  });
});
