// ops/prometheus/alerts.yml: `promtool test rules` runs its tests (alerts.test.yml), and its
// thresholds are the ones the server's own view uses (ALERT_THRESHOLDS). promtool comes with
// Debian's `prometheus` package, like in test/server-metrics.test.ts.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { ALERT_THRESHOLDS as T } from '../queue/defaults.ts';
import { ALERT_NAMES, runbookOf } from '../queue/alerts.ts';

const DIR = path.resolve(import.meta.dirname, '../ops/prometheus');

function promtool(...args: string[]): Promise<{ code: number; output: string }> {
  return new Promise((resolve, reject) => {
    execFile('promtool', args, { cwd: DIR }, (err, stdout, stderr) => {
      if (err && (err as NodeJS.ErrnoException).code === 'ENOENT') {
        reject(new Error('promtool not found: install Debian\'s "prometheus" package (apt-get install prometheus)'));
        return;
      }
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, output: stdout + stderr });
    });
  });
}

it('the alert rules pass promtool check and their unit tests', async () => {
  const check = await promtool('check', 'rules', 'alerts.yml');
  expect(check.output).toMatch(/SUCCESS: 6 rules found/);
  expect(check.code).toBe(0);
  const test = await promtool('test', 'rules', 'alerts.test.yml');
  expect(test.output).toMatch(/SUCCESS/);
  expect(test.code).toBe(0);
});

it('has every alert, each with a runbook, and the thresholds of ALERT_THRESHOLDS', () => {
  const text = readFileSync(path.join(DIR, 'alerts.yml'), 'utf8');
  const rule = (name: string) => {
    const start = text.indexOf(`- alert: ${name}\n`);
    expect(start, name).toBeGreaterThan(0);
    const end = text.indexOf('- alert:', start + 1);
    return text.slice(start, end < 0 ? undefined : end);
  };
  for (const name of ALERT_NAMES) expect(rule(name)).toContain(`runbook: "${runbookOf(name)}"`);
  const failing = rule('HeraldJobsFailing');
  expect(failing).toContain(`) > ${T.failingRatio}\n`);
  expect(failing).toContain(`[${T.failingWindowMin}m])) >= ${T.failingMinJobs}\n`);
  expect(failing.match(/\[(\d+)m\]/g)?.every((w) => w === `[${T.failingWindowMin}m]`)).toBe(true);
  expect(rule('HeraldQueueStalled')).toContain(`(herald_queue_oldest_ready_age_seconds) > ${T.stalledSeconds}\n`);
  expect(rule('HeraldNoWorker')).toContain(`(herald_queue_no_worker_age_seconds) > ${T.noWorkerSeconds}\n`);
  expect(rule('HeraldStreamHeld')).toContain(`(herald_stream_holder_transaction_age_seconds) > ${T.streamHeldSeconds}\n`);
  expect(rule('HeraldReplicaLagging')).toContain(`for: ${T.replicaLaggingSeconds}s\n`);
  expect(rule('HeraldWorkersDying')).toContain(`(increase(herald_jobs_lease_expired_total[${T.leaseWindowMin}m]))) >= ${T.leaseExpiries}\n`);
});
