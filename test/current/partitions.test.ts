/**
 * What current/ holds of a bucket, read folder by folder or from one listing of current/ (a
 * run of many studies): the same partitions either way, each with its newest part; the files
 * a partition keeps once a run's part is the one kept.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  CurrentListing,
  hasFiles,
  newestRun,
  partitionsOf,
  readAll,
  staleFiles,
} from '../../src/current/partitions.ts';
import { partitionName } from '../../src/current/parts.ts';
import { LocalStorage } from '../../src/storage/local.ts';
import { withTempDir } from '../helpers/environment.ts';

describe('partitions', () => {
  it('are the same read folder by folder or from one listing, each with its newest part', async () => {
    await withTempDir(async (dir) => {
      const store = new LocalStorage(join(dir, 'out'));
      const folder = `current/responses/${partitionName(3)}`;
      await store.put(`${folder}/part-20260101T000000Z.parquet`, 'old');
      await store.put(`${folder}/part-20260102T000000Z.parquet`, 'newer');
      await store.put(`${folder}/part-20260102T000000Z.csv`, 'newer,csv');
      await store.put(`current/answers/${partitionName(4)}/part-20260101T000000Z.parquet`, 'other bucket');
      await store.put('current/wide/study_id=s-1/sheet.csv', 'a,b');

      const byFolder = await partitionsOf(store, 3);
      const listed = await partitionsOf(store, 3, new CurrentListing(store));
      const sorted = (map: typeof byFolder) =>
        [...map].map(([table, p]) => [
          table,
          { ...p, files: [...p.files].sort((a, b) => (a.name < b.name ? -1 : 1)) },
        ]);
      expect(sorted(listed)).toEqual(sorted(byFolder));
      const responses = byFolder.get('responses')!;
      expect(responses.previous).toEqual({ path: `${folder}/part-20260102T000000Z.parquet`, bytes: 5 });
      expect(byFolder.get('answers')).toEqual({
        path: `current/answers/${partitionName(3)}`,
        files: [],
        previous: null,
      });
      expect(newestRun(responses.files)).toBe('20260102T000000Z');
      expect(staleFiles(responses, '20260102T000000Z')).toEqual([`${folder}/part-20260101T000000Z.parquet`]);
      expect(await readAll(store, byFolder.get('answers')!, 'answers')).toEqual([]);

      expect(await hasFiles(store, 'current/wide/study_id=s-1')).toBe(true);
      expect(await hasFiles(store, 'current/wide/study_id=s-1', new CurrentListing(store))).toBe(true);
      expect(await hasFiles(store, 'current/wide/study_id=s-2', new CurrentListing(store))).toBe(false);
    });
  });
});
