#!/usr/bin/env node
// Herald's command line. TypeScript runs through tsx's loader, which also lets workers load
// task files written in TypeScript (--tasks DIR). Both of tsx's hooks are on: a task file in a
// directory whose package.json is not "type": "module" (or that has none) is CommonJS to Node,
// and without the require() hook its TypeScript or `export default` cannot load.
import { register as registerCommonJs } from 'tsx/cjs/api';
import { register } from 'tsx/esm/api';

registerCommonJs();
register();
await import('./cli.ts');
