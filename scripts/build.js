/**
 * Compiles src/ into one folder of JavaScript the CLI runs: `node scripts/build.js [OUTDIR]`
 * (default dist/). npm runs it as `prepare` (npm ci in a clone, npm install from git) and
 * `prepack` (npm pack, npm publish), so every package carries dist/ and no compiler.
 *
 * esbuild, not tsc: the sources import each other with `.ts` extensions and import
 * package.json, which a bundle inlines; a bundle is also a handful of files for node to load
 * instead of some 150 modules (start-up, bench/startup.ts). Dependencies stay external, as
 * installed by npm. Chunks are split at the dynamic imports, so `--help` loads no pipeline.
 *
 * The folder records the fingerprint of the sources it was built from (build.json):
 * bin/study-export.js in a clone runs it only while the sources still match.
 */
import { createHash } from 'node:crypto';
import {
  cpSync,
  existsSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = join(dirname(fileURLToPath(import.meta.url)), '..');
export const BUILD_INFO = 'build.json';

/**
 * A digest of everything a build is made from: every source file's path, size and
 * modification time, package.json and this script. Cheap enough for every start (stat calls
 * only); any edit, checkout or pull changes it.
 */
export function fingerprint() {
  const hash = createHash('sha256');
  const add = (path) => {
    const stat = statSync(path);
    hash.update(`${relative(root, path)}\0${stat.size}\0${stat.mtimeMs}\n`);
  };
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) =>
      a.name < b.name ? -1 : 1,
    )) {
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

/**
 * Builds the sources into `outdir`, whole or not at all: written beside it and renamed into
 * place. Returns false when another process put a build there first (theirs is used).
 */
export async function build(outdir, id = fingerprint()) {
  const { build: esbuild } = await import('esbuild');
  const temporary = `${outdir}.${process.pid}.tmp`;
  rmSync(temporary, { recursive: true, force: true });
  await esbuild({
    entryPoints: [join(root, 'src', 'cli.ts')],
    outdir: temporary,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    packages: 'external',
    logLevel: 'warning',
  });
  // The sandbox's media files, read beside the chunk that serves them (src/sandbox/media.ts).
  cpSync(join(root, 'src', 'sandbox', 'fixtures'), join(temporary, 'fixtures'), {
    recursive: true,
    filter: (path) => !path.endsWith('.md'),
  });
  writeFileSync(join(temporary, BUILD_INFO), `${JSON.stringify({ fingerprint: id }, null, 2)}\n`);
  try {
    renameSync(temporary, outdir);
    return true;
  } catch {
    rmSync(temporary, { recursive: true, force: true });
    return false;
  }
}

/** The fingerprint a build folder records, or null. */
export function builtFrom(outdir) {
  try {
    return JSON.parse(readFileSync(join(outdir, BUILD_INFO), 'utf8')).fingerprint ?? null;
  } catch {
    return null;
  }
}

// `node scripts/build.js [--if-stale] [OUTDIR]`: --if-stale keeps a folder already built from
// these sources (npm pack runs prepack and then prepare: one build, not two).
if (process.argv[1] === fileURLToPath(import.meta.url) && !existsSync(join(root, 'src'))) {
  // An installed package: it carries dist/ and no sources (an npm that runs prepare there).
  process.stderr.write('no sources to build: dist/ came with the package\n');
} else if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const ifStale = args.includes('--if-stale');
  const outdir = join(root, args.find((arg) => !arg.startsWith('--')) ?? 'dist');
  const id = fingerprint();
  const where = relative(process.cwd(), outdir) || '.';
  if (ifStale && builtFrom(outdir) === id) {
    process.stderr.write(`${where} is up to date\n`);
  } else {
    rmSync(outdir, { recursive: true, force: true });
    await build(outdir, id);
    process.stderr.write(`built ${where}\n`);
  }
}
