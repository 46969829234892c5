/**
 * npm 11 lists after an install every dependency whose install script package.json's
 * `allowScripts` does not cover (npm 12 skips them): each one in the locked tree must be covered,
 * so `npm ci` prints no such list (docs/install.md). esbuild's postinstall is denied: the build
 * calls its JavaScript API, which runs the binary of the platform package (@esbuild/linux-x64 and
 * the like) and never the `esbuild` command the postinstall swaps for it.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import packageJson from '../../package.json' with { type: 'json' };
import { repoRoot } from '../helpers/cli.ts';

describe('install scripts', () => {
  it('every dependency with an install script is reviewed in allowScripts', async () => {
    const lock = JSON.parse(await readFile(path.join(repoRoot, 'npm-shrinkwrap.json'), 'utf8')) as {
      packages: Record<string, { hasInstallScript?: boolean }>;
    };
    const withScripts = Object.entries(lock.packages)
      .filter(([at, entry]) => at !== '' && entry.hasInstallScript === true)
      .map(([at]) => at.slice(at.lastIndexOf('node_modules/') + 'node_modules/'.length));
    // The test is only worth it while the tree has one.
    expect(withScripts).toContain('esbuild');
    const reviewed = (packageJson as { allowScripts?: Record<string, boolean> }).allowScripts ?? {};
    for (const name of withScripts) expect(Object.keys(reviewed), name).toContain(name);
    expect(reviewed.esbuild).toBe(false);
  });
});
