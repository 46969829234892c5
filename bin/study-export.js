#!/bin/sh
':' //; exec node --max-old-space-size=1024 --initial-old-space-size=64 "$0" "$@"
// Line 2 is for sh, a no-op for JavaScript: run as a program (npx, npm start), the file
// re-executes itself under node with these heap settings (bench/README.md has the figures):
// - a 1 GiB limit, some twenty times the live heap the pipeline needs. Below 2 GiB V8
//   lets the heap grow to about 1.6x the live data between full collections instead of
//   4x: a 10k-response export peaked at 253 MB instead of 308-356 MB, in the same time;
// - an initial old space of 64 MB, so a small live heap (the media step's is ~20 MB) is
//   not fully collected every few dozen milliseconds, which had cost about a quarter of
//   the download throughput.
// `node bin/study-export.js` runs without them. (A shebang with `env -S` would say the
// same, but BusyBox's env has no -S.)
// Biome's formatter skips this file: it would add a `;` after ':' and break line 2 for sh.
//
// The CLI is written in TypeScript and run through tsx, so `npx study-export` works right
// after `npm ci` with no build step and no stale build output.
import { register } from 'tsx/esm/api';

register();
await import('../src/cli.ts');
