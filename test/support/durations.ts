// `npm run test:durations`: runs `vitest run` with its JSON reporter and prints the ten slowest
// test files as Markdown table rows, then the run's wall time. Arguments go to vitest
// (`npm run test:durations -- --project db`, or some files); `--from REPORT.json` reads a report
// written earlier instead of running anything.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ROOT } from './projects.ts';

const TOP = 10;

interface JsonReport {
  numTotalTests: number;
  numFailedTests: number;
  testResults: { name: string; startTime: number; endTime: number; status: string; assertionResults: unknown[] }[];
}

function runVitest(args: string[]): { report: string; wallMs: number; status: number } {
  const report = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'herald-durations-')), 'report.json');
  const started = performance.now();
  const run = spawnSync('npx', ['vitest', 'run', '--reporter=dot', '--reporter=json', `--outputFile.json=${report}`, ...args], {
    cwd: ROOT,
    stdio: 'inherit',
  });
  return { report, wallMs: performance.now() - started, status: run.status ?? 1 };
}

const args = process.argv.slice(2);
const from = args.indexOf('--from');
const run = from >= 0 ? { report: path.resolve(args[from + 1]), wallMs: undefined, status: 0 } : runVitest(args);
const { numTotalTests, numFailedTests, testResults } = JSON.parse(fs.readFileSync(run.report, 'utf8')) as JsonReport;

const files = testResults
  .map((f) => ({ file: path.relative(ROOT, f.name), seconds: (f.endTime - f.startTime) / 1000, tests: f.assertionResults.length, status: f.status }))
  .sort((a, b) => b.seconds - a.seconds);

console.log(`\nThe ${Math.min(TOP, files.length)} slowest of ${files.length} files (${numTotalTests} tests, ${numFailedTests} failed):\n`);
console.log('| File | Seconds | Tests |');
console.log('| --- | ---: | ---: |');
for (const f of files.slice(0, TOP)) console.log(`| \`${f.file}\`${f.status === 'passed' ? '' : ` (${f.status})`} | ${f.seconds.toFixed(1)} | ${f.tests} |`);
const summed = files.reduce((s, f) => s + f.seconds, 0);
console.log(`\nsum of file times ${summed.toFixed(0)} s${run.wallMs === undefined ? '' : `, wall time ${(run.wallMs / 1000).toFixed(0)} s`}; report: ${run.report}`);
process.exitCode = run.status;
