/**
 * bin/study-export.js run as a program (as npx and npm start run it): its sh line must
 * re-execute it under node with the heap flags, in the same process (exec), and the bench
 * must read the same flags for the steps it measures.
 */
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { describe, expect, it } from 'vitest';
import { productNodeFlags } from '../../bench/processes.ts';
import { cleanEnv, exitOf, repoRoot } from './helpers.ts';

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
});
