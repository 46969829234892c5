/** A near miss of an option names the one meant; a folder the user may not write gets a hint. */
import { execFile } from 'node:child_process';
import { chmod, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { closestName } from '../../src/util/closest.ts';
import { cleanEnv, repoRoot, runCli, workdir } from '../helpers/cli.ts';

describe('did you mean', () => {
  it('names the option a misspelt one meant, and nothing for one far from all', async () => {
    const [ful, prot, bogus] = await Promise.all([
      runCli(['run', '--ful']),
      runCli(['sandbox', '--prot', '8080']),
      runCli(['run', '--bogus', '--formts', 'csv']),
    ]);
    expect(ful.code).toBe(2);
    expect(ful.stderr).toBe(
      'study-export: unknown option --ful (did you mean --full?)\n  hint: see `study-export run --help`\n',
    );
    expect(prot.stderr).toContain('unknown option --prot (did you mean --port?)');
    expect(bogus.stderr).toContain('unknown options --bogus, --formts (did you mean --formats?)');
  });

  it('takes one edit per three letters, a swap, or a beginning', () => {
    const known = ['full', 'formats', 'dry-run', 'concurrency', 'no-media', 'media', 'out', 'state'];
    expect(closestName('ful', known)).toBe('full');
    expect(closestName('dryrun', known)).toBe('dry-run');
    expect(closestName('conc', known)).toBe('concurrency');
    expect(closestName('sate', known)).toBe('state');
    expect(closestName('meida', known)).toBe('media');
    expect(closestName('bogus', known)).toBeUndefined();
    expect(closestName('x', known)).toBeUndefined();
  });
});

describe('permission denied on the output folder', () => {
  it('says which folder and how to choose another, exit 2', async () => {
    const work = await workdir('name: demo\nsource:\n  base_url: sandbox\nmedia:\n  enabled: false\n');
    try {
      const readOnly = path.join(work.dir, 'read-only');
      await mkdir(readOnly);
      await chmod(readOnly, 0o555);
      await chmod(work.dir, 0o755);
      // root may write anywhere: the command then runs as nobody, who may not.
      const asNobody = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : {};
      const result = await new Promise<{ code: number; stderr: string }>((resolve) => {
        execFile(
          process.execPath,
          [path.join(repoRoot, 'bin', 'study-export.js'), 'run', '--out', path.join(readOnly, 'out')],
          { cwd: work.dir, env: cleanEnv({ HOME: work.dir }), ...asNobody },
          (error, _stdout, stderr) => resolve({ code: error ? Number(error.code) : 0, stderr }),
        );
      });
      expect(result.stderr).toContain(`study-export: output folder: permission denied: ${readOnly}/out`);
      expect(result.stderr).toContain(
        '  hint: choose a folder this user can write with --out DIR (or output.dir in the pipeline file)',
      );
      expect(result.code).toBe(2);
    } finally {
      await work.cleanup();
    }
  });
});
