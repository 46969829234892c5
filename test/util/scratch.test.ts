/**
 * What openScratch clears before it makes the run's own folder: folders of dead owners, and
 * an earlier version's listing spills (no owner in the name) once nothing in them changed for
 * a day. Everything else in the temporary directory is left alone.
 */
import { spawnSync } from 'node:child_process';
import { mkdir, readdir, symlink, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { OLD_SPILL_AGE_MS, openScratch } from '../../src/util/scratch.ts';
import { withTempDir } from '../helpers/environment.ts';

/** A folder with one file, both last modified `ageMs` ago (the file `fileAgeMs` ago if given). */
async function folderAged(path: string, ageMs: number, fileAgeMs = ageMs): Promise<void> {
  await mkdir(path);
  await writeFile(join(path, 'spill.jsonl'), '{"id":"r-1","answers":{"Q":"private"}}\n');
  const at = (ms: number) => new Date(Date.now() - ms);
  await utimes(join(path, 'spill.jsonl'), at(fileAgeMs), at(fileAgeMs));
  await utimes(path, at(ageMs), at(ageMs));
}

/** The pid of a process that has exited. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', '']);
  return child.pid!;
}

describe('openScratch', () => {
  it('removes old-style spills a day old and dead owners’ folders, and nothing else', async () => {
    await withTempDir(async (tmp) => {
      const day = OLD_SPILL_AGE_MS;
      await folderAged(join(tmp, 'study-export-spill-aB3xYz'), 2 * day);
      await folderAged(join(tmp, 'study-export-spill-Q1w2E3'), day + 60_000);
      // Kept: still being written (a fresh file), freshly made, not an old-style name, a link.
      await folderAged(join(tmp, 'study-export-spill-fresh1'), 2 * day, 1000);
      await folderAged(join(tmp, 'study-export-spill-newer1'), day - 60_000);
      await folderAged(join(tmp, 'study-export-spill-toolong7'), 2 * day);
      await folderAged(join(tmp, 'other-spill-abcdef'), 2 * day);
      await folderAged(join(tmp, 'target'), 2 * day);
      await symlink(join(tmp, 'target'), join(tmp, 'study-export-spill-link01'));
      // Owned folders: a dead owner's goes, a live one's (this test's parent process) stays.
      await folderAged(join(tmp, `study-export-${deadPid()}-abc123`), 0);
      await folderAged(join(tmp, `study-export-${process.ppid}-def456`), 2 * day);

      const scratch = await openScratch(tmp);
      const left = (await readdir(tmp)).filter((name) => join(tmp, name) !== scratch.dir).sort();
      expect(left).toEqual(
        [
          'other-spill-abcdef',
          'study-export-spill-fresh1',
          'study-export-spill-link01',
          'study-export-spill-newer1',
          'study-export-spill-toolong7',
          `study-export-${process.ppid}-def456`,
          'target',
        ].sort(),
      );
      await scratch.remove();
    });
  });
});
