#!/usr/bin/env node
// Herald's command line. TypeScript runs through tsx's loader, which also lets workers load
// task files written in TypeScript (--tasks DIR).
import { register } from 'tsx/esm/api';

register();
await import('./cli.ts');
