// The board: the Svelte app in web/, built by Vite to web/dist and served at `/`.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import fastifyStatic from '@fastify/static';
import type { Logger } from 'pino';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const BOARD_DIR = path.join(ROOT, 'web', 'dist');

const isBuilt = (dir: string) => fs.existsSync(path.join(dir, 'index.html'));

/**
 * `herald start`: builds the board when web/dist is missing (the same as `npm run build`). The
 * first line says where the board will be (`boardUrl`), before the build's wait.
 */
export async function ensureBoardBuilt(logger: Logger, boardUrl: string, outDir = BOARD_DIR): Promise<void> {
  if (isBuilt(outDir)) return;
  logger.info({ board: boardUrl, outDir }, `the board will be at ${boardUrl} in a moment: building it first (once; npm run build)`);
  const started = Date.now();
  await buildBoard(outDir);
  logger.info({ ms: Date.now() - started }, 'board built');
}

/**
 * Builds the board into `outDir` as a whole: Vite writes a directory beside it, which then takes
 * its place. A build cut short (Ctrl-C during the first start) leaves no half-written board that
 * would pass for a built one, and a running server never serves one mid-build.
 */
export async function buildBoard(outDir = BOARD_DIR): Promise<void> {
  const next = `${outDir}.next-${process.pid}`;
  const old = `${outDir}.old-${process.pid}`;
  try {
    const { build } = await import('vite');
    await build({ configFile: path.join(ROOT, 'web', 'vite.config.ts'), logLevel: 'warn', build: { outDir: next, emptyOutDir: true } });
    if (fs.existsSync(outDir)) fs.renameSync(outDir, old);
    try {
      fs.renameSync(next, outDir);
    } catch (err) {
      // Another process put its build there between the two renames: that one serves as well.
      if (!isBuilt(outDir)) throw err;
    }
  } finally {
    fs.rmSync(next, { recursive: true, force: true });
    fs.rmSync(old, { recursive: true, force: true });
  }
}

const NOT_BUILT = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Herald</title></head>
<body style="font-family: system-ui, sans-serif; max-width: 40rem; margin: 4rem auto">
<h1>Herald</h1>
<p>The board is not built yet. Run <code>npm run build</code> (or <code>npx herald start</code>, which builds it), then reload.</p>
<p>The API works already: see <a href="/api/docs">/api/docs</a>.</p>
</body></html>
`;

/** Serves the built board at `/`, or a page that says how to build it. */
export async function registerBoard(app: FastifyInstance, dir = BOARD_DIR): Promise<void> {
  if (!isBuilt(dir)) {
    app.get('/', { schema: { hide: true } }, (_request, reply) => reply.type('text/html; charset=utf-8').send(NOT_BUILT));
    return;
  }
  await app.register(fastifyStatic, {
    root: dir,
    prefix: '/',
    cacheControl: false,
    // Vite puts content hashes in asset names, so those can be cached; index.html must not be.
    setHeaders(res, file) {
      res.setHeader('cache-control', file.includes(`${path.sep}assets${path.sep}`) ? 'public, max-age=31536000, immutable' : 'no-cache');
    },
  });
}
