/**
 * An earlier version's listing spills (study-export-spill-<random>, no owner in the name) are
 * removed once nothing in them changed for a day; everything else in the temporary directory
 * is left alone.
 */
import { readdir, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { OLD_SPILL_AGE_MS, removeOldSpills } from '../../src/upgrade/spills.ts';
import { withTempDir } from '../helpers/environment.ts';
import { deadPid, folderAged } from '../helpers/scratch.ts';

describe('removeOldSpills', () => {
  it('removes old-style spills a day old, and nothing else', async () => {
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
      // Scratch folders of this version are not its to judge, a dead owner's included.
      const dead = `study-export-${deadPid()}-abc123`;
      await folderAged(join(tmp, dead), 2 * day);

      expect((await removeOldSpills(tmp)).sort()).toEqual([
        'study-export-spill-Q1w2E3',
        'study-export-spill-aB3xYz',
      ]);
      expect((await readdir(tmp)).sort()).toEqual(
        [
          dead,
          'other-spill-abcdef',
          'study-export-spill-fresh1',
          'study-export-spill-link01',
          'study-export-spill-newer1',
          'study-export-spill-toolong7',
          'target',
        ].sort(),
      );
    });
  });
});
