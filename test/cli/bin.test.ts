/**
 * bin/study-export.js run as a program (as npx and npm start run it): its sh line must
 * re-execute it under node with the heap flags, in the same process (exec), and the bench
 * must read the same flags for the steps it measures.
 */
import { execFile, spawn } from 'node:child_process';
import { cp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { productNodeFlags } from '../../bench/processes.ts';
import { cleanEnv, exitOf, repoRoot } from '../helpers/cli.ts';
import { withTempDir } from '../helpers/environment.ts';

const execFileAsync = promisify(execFile);

const bin = path.join(repoRoot, 'bin', 'study-export.js');

describe('bin/study-export.js as a program', () => {
  it('re-executes itself under node with the heap flags the bench also uses', async () => {
    const child = spawn(bin, ['sandbox', '--port', '0'], {
      cwd: repoRoot,
      env: cleanEnv(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      const firstLine = await new Promise<string>((resolve, reject) => {
        createInterface({ input: child.stdout! }).once('line', resolve);
        child.once('exit', (code) => reject(new Error(`exited early with ${code}`)));
      });
      expect(JSON.parse(firstLine)).toHaveProperty('base_url');
      // exec kept the process: its command line is now node's, with the flags before the script.
      const argv = (await readFile(`/proc/${child.pid}/cmdline`, 'utf8')).split('\0').filter(Boolean);
      expect(path.basename(argv[0] ?? '')).toBe('node');
      const script = argv.indexOf(bin);
      expect(script).toBeGreaterThan(0);
      expect(argv.slice(1, script)).toEqual(['--max-old-space-size=1024', '--initial-old-space-size=64']);
      expect(argv.slice(script + 1)).toEqual(['sandbox', '--port', '0']);
      expect(productNodeFlags()).toEqual(argv.slice(1, script));
    } finally {
      child.kill('SIGTERM');
      await exitOf(child);
    }
  });

  it('in a clone runs dist/ only while it matches the sources: an edited source gets a build of its own, and without one the sources run through tsx', async () => {
    await withTempDir(async (dir) => {
      // A copy of the clone: the test edits its sources, never the repository's.
      for (const part of ['src', 'bin', 'scripts', 'package.json']) {
        await cp(path.join(repoRoot, part), path.join(dir, part), {
          recursive: true,
          preserveTimestamps: true,
        });
      }
      await symlink(path.join(repoRoot, 'node_modules'), path.join(dir, 'node_modules'));
      const cli = path.join(dir, 'src', 'cli.ts');
      const original = await readFile(cli, 'utf8');
      const version = async () => {
        const { stdout, stderr } = await execFileAsync(
          process.execPath,
          [path.join(dir, 'bin', 'study-export.js'), '--version'],
          { env: cleanEnv() },
        );
        return { version: stdout.trim(), marker: stderr.trim() };
      };
      const marked = async (marker: string) => {
        await writeFile(cli, `process.stderr.write(${JSON.stringify(`${marker}\n`)});\n${original}`);
        return version();
      };
      const builds = async () => readdir(path.join(dir, '.build')).catch(() => []);

      // What npm ci's prepare makes: dist/ of these sources, run as it is.
      await execFileAsync(process.execPath, [path.join(dir, 'scripts', 'build.js')], { cwd: dir });
      await writeFile(
        path.join(dir, 'dist', 'cli.js'),
        `process.stderr.write('dist\\n');\n${await readFile(path.join(dir, 'dist', 'cli.js'), 'utf8')}`,
      );
      const fromDist = await version();
      expect(fromDist).toEqual({ version: expect.stringMatching(/\d+\.\d+\.\d+/), marker: 'dist' });
      expect(await builds()).toEqual([]);

      // An edit makes dist/ stale: it never runs again, a build of the edited sources does.
      expect(await marked('first edit')).toEqual({ ...fromDist, marker: 'first edit' });
      expect(await builds()).toHaveLength(1);
      expect(await marked('second edit')).toEqual({ ...fromDist, marker: 'second edit' });
      expect(await builds()).toHaveLength(2);

      // Nowhere to put a build: the sources themselves run.
      await rm(path.join(dir, '.build'), { recursive: true });
      await writeFile(path.join(dir, '.build'), 'not a folder');
      expect(await marked('third edit')).toEqual({ ...fromDist, marker: 'third edit' });

      // `npm run build` (prepare) brings dist/ back in line with the sources, edit included.
      await execFileAsync(process.execPath, [path.join(dir, 'scripts', 'build.js'), '--if-stale'], {
        cwd: dir,
      });
      await writeFile(
        path.join(dir, 'dist', 'cli.js'),
        `process.stderr.write('dist again\\n');\n${await readFile(path.join(dir, 'dist', 'cli.js'), 'utf8')}`,
      );
      expect(await version()).toEqual({ ...fromDist, marker: 'dist again\nthird edit' });
    });
  });
});
