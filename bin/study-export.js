#!/bin/sh
':' //; exec node --max-old-space-size=1024 --initial-old-space-size=64 "$0" "$@"
// Line 2 is for sh, a no-op for JavaScript: run as a program (an installed command, npx,
// npm start, the container's entrypoint), the file re-executes itself under node with these
// heap settings (bench/README.md has the figures):
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
// What runs (docs/install.md):
// - an installed package (no src/ beside dist/): dist/, compiled when the package was made
//   (scripts/build.js, npm's prepare and prepack). Nothing is written at run time.
// - a clone: dist/ only while it was built from the sources as they are now (build.json
//   holds their fingerprint); otherwise a build of the current sources in .build/<fingerprint>/,
//   made on first use (older ones are removed after an hour: a process may still be loading
//   their chunks); where none can be made, the sources themselves through tsx.
import { existsSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const packaged = join(root, 'dist', 'cli.js');

/** The compiled CLI of these sources, or null when none can be had. */
async function compiled() {
  const { build, builtFrom, fingerprint } = await import(pathToFileURL(join(root, 'scripts', 'build.js')).href);
  const id = fingerprint();
  if (existsSync(packaged) && builtFrom(join(root, 'dist')) === id) return packaged;
  const builds = join(root, '.build');
  const dir = join(builds, id);
  const cli = join(dir, 'cli.js');
  if (existsSync(cli)) return cli;
  mkdirSync(builds, { recursive: true });
  // A second or two of silence on the first run would look stuck (on a terminal only: in a
  // log or a pipe, stderr carries the command's own output).
  if (process.stderr.isTTY) process.stderr.write('study-export: building the command line (once after each update)\n');
  await build(dir, id);
  removeOldBuilds(builds, id);
  return existsSync(cli) ? cli : null;
}

/** Builds of other sources, an hour old or more (a process may still be running one). */
function removeOldBuilds(builds, current) {
  for (const name of readdirSync(builds)) {
    const path = join(builds, name);
    if (name !== current && Date.now() - statSync(path).mtimeMs > 3600_000)
      rmSync(path, { recursive: true, force: true });
  }
}

if (!existsSync(join(root, 'src', 'cli.ts'))) {
  if (!existsSync(packaged)) {
    process.stderr.write(
      `study-export: this install has no compiled program (${packaged} is missing): the package was made without its build; see docs/install.md\n`,
    );
    process.exit(1);
  }
  await import(pathToFileURL(packaged).href);
} else {
  let cli = null;
  try {
    cli = await compiled();
  } catch {
    cli = null;
  }
  if (cli !== null) {
    await import(pathToFileURL(cli).href);
  } else {
    const { register } = await import('tsx/esm/api');
    register();
    await import(pathToFileURL(join(root, 'src', 'cli.ts')).href);
  }
}
