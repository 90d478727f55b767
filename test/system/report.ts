// Each system test records its figures in test-artifacts/system-report.json (ignored by git) and
// prints them, so a run's numbers can be quoted.
import fs from 'node:fs';
import path from 'node:path';

const FILE = path.resolve('test-artifacts', 'system-report.json');

export function writeReport(name: string, figures: Record<string, unknown>): void {
  fs.mkdirSync(path.dirname(FILE), { recursive: true });
  let all: Record<string, unknown> = {};
  try {
    all = JSON.parse(fs.readFileSync(FILE, 'utf8'));
  } catch {
    // first report of the run
  }
  all[name] = { ...figures, postgres: process.env.DATABASE_URL ? 'DATABASE_URL' : 'embedded', at: new Date().toISOString() };
  fs.writeFileSync(FILE, `${JSON.stringify(all, null, 2)}\n`);
  console.log(`[system:${name}] ${JSON.stringify(figures)}`);
}
