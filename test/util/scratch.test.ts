/**
 * What openScratch clears before it makes the run's own folder: folders of dead owners.
 * Everything else in the temporary directory is left alone, an earlier version's listing
 * spills included (src/upgrade/ clears those: test/upgrade/spills.test.ts).
 */
import { readdir, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { OLD_SPILL_AGE_MS } from '../../src/upgrade/spills.ts';
import { openScratch } from '../../src/util/scratch.ts';
import { withTempDir } from '../helpers/environment.ts';
import { deadPid, folderAged } from '../helpers/scratch.ts';

describe('openScratch', () => {
  it('removes dead owners’ folders, and nothing else', async () => {
    await withTempDir(async (tmp) => {
      const day = OLD_SPILL_AGE_MS;
      await folderAged(join(tmp, 'study-export-spill-aB3xYz'), 2 * day);
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
          'study-export-spill-aB3xYz',
          'study-export-spill-link01',
          `study-export-${process.ppid}-def456`,
          'target',
        ].sort(),
      );
      await scratch.remove();
    });
  });
});
