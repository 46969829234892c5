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
// The CLI is written in TypeScript. Loading it through tsx compiles and resolves every
// module through a loader thread on each command (bench/README.md has the cost), so it runs
// from a bundle (.build/<fingerprint>/, made by esbuild the first time it is needed). The
// fingerprint covers every source file's path, size and modification time, package.json
// and this file: a bundle built from other sources is never run. Where no bundle can be
// made (a read-only install, esbuild missing), the sources run through tsx.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const entry = join(root, 'src', 'cli.ts');

/** A digest of everything the bundle is made from. */
function fingerprint() {
  const hash = createHash('sha256');
  const add = (path) => {
    const stat = statSync(path);
    hash.update(`${path}\0${stat.size}\0${stat.mtimeMs}\n`);
  };
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else add(path);
    }
  };
  walk(join(root, 'src'));
  add(join(root, 'package.json'));
  add(fileURLToPath(import.meta.url));
  return hash.digest('hex').slice(0, 16);
}

/** The bundle for these sources: built now if missing; null when it cannot be. */
async function bundle() {
  const builds = join(root, '.build');
  const id = fingerprint();
  const dir = join(builds, id);
  const cli = join(dir, 'cli.js');
  if (existsSync(cli)) return cli;
  const esbuild = await import('esbuild');
  const temporary = `${dir}.${process.pid}.tmp`;
  await esbuild.build({
    entryPoints: [entry],
    outdir: temporary,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    packages: 'external',
    logLevel: 'silent',
  });
  try {
    renameSync(temporary, dir);
  } catch {
    // Another process built the same sources first: use its bundle.
    rmSync(temporary, { recursive: true, force: true });
  }
  removeOldBuilds(builds, id);
  return existsSync(cli) ? cli : null;
}

/** Bundles of other sources, an hour old or more (a process may still be running one). */
function removeOldBuilds(builds, current) {
  for (const name of readdirSync(builds)) {
    const path = join(builds, name);
    if (name !== current && Date.now() - statSync(path).mtimeMs > 3600_000)
      rmSync(path, { recursive: true, force: true });
  }
}

let cli = null;
try {
  mkdirSync(join(root, '.build'), { recursive: true });
  cli = await bundle();
} catch {
  cli = null;
}
if (cli !== null) {
  await import(pathToFileURL(cli).href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import(pathToFileURL(entry).href);
}
