// `npm install` on any Node that Herald's `engines` admits must not warn EBADENGINE: every locked
// package's own `engines.node` has to cover the whole range. The bench's peer queues have their own
// package (bench/peers) with its own range, checked the same way.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import semver from 'semver';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

interface Manifest { engines?: { node?: string } }
interface Lock { packages: Record<string, Manifest> }

const read = <T>(file: string): T => JSON.parse(fs.readFileSync(path.join(ROOT, file), 'utf8')) as T;

/** The locked packages whose engines.node leaves out part of the range the package promises. */
function narrower(dir: string): string[] {
  const range = read<Manifest>(path.join(dir, 'package.json')).engines?.node;
  if (!range) throw new Error(`${dir}/package.json has no engines.node`);
  const lock = read<Lock>(path.join(dir, 'package-lock.json'));
  return Object.entries(lock.packages)
    .filter(([name, p]) => name !== '' && p.engines?.node && !semver.subset(range, p.engines.node))
    .map(([name, p]) => `${name} needs ${p.engines!.node}, not all of ${range}`);
}

describe('engines', () => {
  it("every dependency of Herald runs on every Node that Herald's engines field admits", () => {
    expect(narrower('.')).toEqual([]);
  });

  it("the bench's peers run on every Node their own package admits", () => {
    expect(narrower('bench/peers')).toEqual([]);
  });

  it('the Node running this suite is one that the engines field admits', () => {
    expect(semver.satisfies(process.versions.node, read<Manifest>('package.json').engines!.node!)).toBe(true);
  });
});
