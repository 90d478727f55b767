// Builds the board: `vite build web` from the project root writes web/dist, which the server
// serves at `/` (API on the same origin). `vite web` runs a dev server proxying to a local Herald.
import { fileURLToPath } from 'node:url';
import { svelte } from '@sveltejs/vite-plugin-svelte';
import { defineConfig } from 'vite';

const root = fileURLToPath(new URL('.', import.meta.url));
const api = process.env.HERALD_URL ?? 'http://127.0.0.1:3000';

export default defineConfig({
  root,
  // Relative asset URLs: the built board works wherever index.html is served from.
  base: './',
  plugins: [svelte()],
  build: {
    outDir: fileURLToPath(new URL('./dist', import.meta.url)),
    emptyOutDir: true,
    chunkSizeWarningLimit: 800,
    // A build's timing report is for tuning the build, not news for whoever starts Herald: on a
    // loaded machine it printed on every first `herald start`.
    rolldownOptions: { checks: { bundlerTimings: false } },
  },
  server: {
    proxy: {
      // SSE goes through the same proxy; it streams as long as nothing buffers it.
      '/api': { target: api, changeOrigin: true },
      '/metrics': { target: api, changeOrigin: true },
    },
  },
});
