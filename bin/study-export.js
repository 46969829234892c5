#!/usr/bin/env node
// The CLI is written in TypeScript and run through tsx, so `npx study-export` works right
// after `npm ci` with no build step and no stale build output.
import { register } from 'tsx/esm/api';

register();
await import('../src/cli.ts');
