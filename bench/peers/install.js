// Installs the bench's peer queues (this folder's package.json) when they are missing or older
// than the lock file: `npm run bench` and `npm run typecheck` run it first. They are not among
// Herald's own dependencies because pg-boss 12 and graphile-worker 0.18 declare Node >= 22 while
// Herald runs on Node 20 as well; installing them with Herald would warn on every fresh install.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const dir = path.dirname(fileURLToPath(import.meta.url));
const installed = path.join(dir, 'node_modules', '.package-lock.json');
const lock = path.join(dir, 'package-lock.json');

if (!fs.existsSync(installed) || fs.statSync(installed).mtimeMs < fs.statSync(lock).mtimeMs) {
  process.stderr.write(`installing the bench's peer queues into ${path.relative(process.cwd(), dir) || '.'}/node_modules\n`);
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const r = spawnSync(npm, ['ci', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: dir, stdio: 'inherit' });
  if (r.status !== 0) process.exit(r.status ?? 1);
}
