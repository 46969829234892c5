/**
 * What earlier versions left of the state beside the runs, read through the state store and
 * retired once the objects replacing it are written: a state.json (kept as
 * state.json.migrated), and objects under an earlier naming rule (removed while they still
 * hold their study).
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { studyObjectPath, studyStateStore } from '../../src/publish/state.ts';
import { LocalStorage } from '../../src/storage/local.ts';
import { upgradingStateStore } from '../../src/upgrade/index.ts';
import { withTempDir } from '../helpers/environment.ts';

const entry = (watermark: string) => ({
  link_id: 'coffee',
  watermark,
  last_run: 'r',
  last_run_at: '2026-01-01T00:15:00.000Z',
});

describe('the state of an earlier version', () => {
  it("reads a state.json as the studies' entries, and retires it once they are objects", async () => {
    await withTempDir(async (dir) => {
      const storage = new LocalStorage(dir);
      // An object already written is newer than the file.
      await storage.put(
        studyObjectPath('study-2'),
        JSON.stringify({ version: 1, study_id: 'study-2', ...entry('2026-02-01T00:00:00.000Z') }),
      );
      await storage.put(
        'state.json',
        `${JSON.stringify({ version: 1, studies: { 'study-1': entry('2026-01-01T00:00:00.000Z'), 'study-2': entry('2025-01-01T00:00:00.000Z') } })}\n`,
      );
      const store = upgradingStateStore(storage);
      const state = await store.read();
      expect(state.studies['study-1']?.watermark).toBe('2026-01-01T00:00:00.000Z');
      expect(state.studies['study-2']?.watermark).toBe('2026-02-01T00:00:00.000Z');
      // The plain store knows nothing of the file.
      expect(Object.keys((await studyStateStore(storage).read()).studies)).toEqual(['study-2']);

      await store.write(state, state);
      expect((await readdir(join(dir, 'state'))).sort()).toEqual(
        [studyObjectPath('study-1'), studyObjectPath('study-2')]
          .map((path) => path.slice('state/'.length))
          .sort(),
      );
      expect(await storage.read('state.json')).toBeNull();
      expect(
        JSON.parse(await readFile(join(dir, 'state.json.migrated'), 'utf8')).studies['study-2'].watermark,
      ).toBe('2025-01-01T00:00:00.000Z');
      expect(await studyStateStore(storage).read()).toEqual(state);
    });
  });

  it('moves an object under an earlier name to its own, and removes the old one', async () => {
    await withTempDir(async (dir) => {
      const storage = new LocalStorage(dir);
      const object = { version: 1, study_id: 'study/1', ...entry('2026-01-01T00:00:00.000Z') };
      await storage.put('state/study_1-old.json', JSON.stringify(object));
      const store = upgradingStateStore(storage);
      const state = await store.read();
      expect(Object.keys(state.studies)).toEqual(['study/1']);
      // Unchanged, it is written all the same: under its own name.
      await store.write(state, state);
      expect(await readdir(join(dir, 'state'))).toEqual([studyObjectPath('study/1').slice('state/'.length)]);
      expect(await studyStateStore(storage).read()).toEqual(state);
    });
  });
});
