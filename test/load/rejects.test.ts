/** rejects.jsonl: every record that failed validation, raw, with the reason. */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createRejectsFile } from '../../src/load/rejects.ts';
import type { Reject } from '../../src/records.ts';
import { localFile } from '../helpers/storage.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'study-export-test-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('rejects file', () => {
  it('is created even when empty, and holds one JSON line per reject', async () => {
    const emptyPath = join(dir, 'empty.jsonl');
    const empty = createRejectsFile(...localFile(emptyPath));
    await empty.close();
    expect(await readFile(emptyPath, 'utf8')).toBe('');

    const path = join(dir, 'rejects.jsonl');
    const rejects = createRejectsFile(...localFile(path));
    const items: Reject[] = [1, 2].map((n) => ({
      stage: 'extract',
      operation: 'get_response',
      response_id: `r${n}`,
      reason: 'transcript: expected array',
      raw: { id: `r${n}`, transcript: 'nope' },
      at: '2026-01-01T00:00:00.000Z',
    }));
    for (const item of items) rejects.write(item);
    expect(rejects.count).toBe(2);
    await rejects.close();
    const lines = (await readFile(path, 'utf8')).trimEnd().split('\n');
    expect(lines.map((line) => JSON.parse(line))).toEqual(items);
  });
});
