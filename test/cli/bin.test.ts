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
import { withTempDir } from '../shared.ts';
import { cleanEnv, exitOf, repoRoot } from './helpers.ts';

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

  it('runs a bundle of the current sources only: an edited source gets a new bundle, and without one the sources run through tsx', async () => {
    await withTempDir(async (dir) => {
      // A copy of the program: the test edits its sources, never the repository's.
      await cp(path.join(repoRoot, 'src'), path.join(dir, 'src'), { recursive: true });
      await cp(path.join(repoRoot, 'bin'), path.join(dir, 'bin'), { recursive: true });
      await cp(path.join(repoRoot, 'package.json'), path.join(dir, 'package.json'));
      await symlink(path.join(repoRoot, 'node_modules'), path.join(dir, 'node_modules'));
      const cli = path.join(dir, 'src', 'cli.ts');
      const original = await readFile(cli, 'utf8');
      const marked = async (marker: string) => {
        await writeFile(cli, `process.stderr.write(${JSON.stringify(`${marker}\n`)});\n${original}`);
        const { stdout, stderr } = await execFileAsync(
          process.execPath,
          [path.join(dir, 'bin', 'study-export.js'), '--version'],
          {
            env: cleanEnv(),
          },
        );
        return { version: stdout.trim(), marker: stderr.trim() };
      };
      const first = await marked('first edit');
      expect(first).toEqual({ version: expect.stringMatching(/\d+\.\d+\.\d+/), marker: 'first edit' });
      expect(await readdir(path.join(dir, '.build'))).toHaveLength(1);
      expect(await marked('second edit')).toEqual({ ...first, marker: 'second edit' });
      expect(await readdir(path.join(dir, '.build'))).toHaveLength(2);

      // Nowhere to put a bundle: the sources themselves run.
      await rm(path.join(dir, '.build'), { recursive: true });
      await writeFile(path.join(dir, '.build'), 'not a folder');
      expect(await marked('third edit')).toEqual({ ...first, marker: 'third edit' });
    });
  });
});
