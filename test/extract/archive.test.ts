import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { listResponses } from '../../src/extract/index.ts';
import { createRawArchive } from '../../src/load/raw.ts';
import { createRejectsFile } from '../../src/load/rejects.ts';
import type { RawRecord, Reject } from '../../src/records.ts';
import { startSandbox } from '../../src/sandbox/index.ts';
import { memorySinks, sandboxClient } from './helpers.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'extract-archive-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

function record(operation: RawRecord['operation'], n: number): RawRecord {
  return {
    operation,
    url: `http://127.0.0.1:1/api/public/${operation}`,
    status: 200,
    received_at: '2026-01-01T00:00:00.000Z',
    payload: { n, text: 'ünïcødé\nline "quoted"', big: 'x'.repeat(n * 100) },
  };
}

describe('raw archive', () => {
  it('writes one gzipped JSON-lines file per operation, every record as given', async () => {
    const archive = createRawArchive(join(dir, 'raw'));
    const written: RawRecord[] = [];
    for (let n = 0; n < 500; n++) {
      const r = record(n % 3 === 0 ? 'get_response' : 'list_responses', n);
      archive.write(r);
      written.push(r);
    }
    const paths = await archive.close();
    expect(paths.map((p) => p.slice(dir.length)).sort()).toEqual([
      '/raw/get_response.jsonl.gz',
      '/raw/list_responses.jsonl.gz',
    ]);
    const readBack = async (name: string) =>
      gunzipSync(await readFile(join(dir, 'raw', name)))
        .toString('utf8')
        .trimEnd()
        .split('\n')
        .map((line) => JSON.parse(line) as RawRecord);
    expect(await readBack('get_response.jsonl.gz')).toEqual(
      written.filter((r) => r.operation === 'get_response'),
    );
    expect(await readBack('list_responses.jsonl.gz')).toEqual(
      written.filter((r) => r.operation === 'list_responses'),
    );
    expect(archive.count).toBe(500);
    expect(() => archive.write(record('list_surveys', 1))).toThrow(/after close/);
  });
});

describe('rejects file', () => {
  it('is created even when empty, and holds one JSON line per reject', async () => {
    const emptyPath = join(dir, 'empty.jsonl');
    const empty = createRejectsFile(emptyPath);
    await empty.close();
    expect(await readFile(emptyPath, 'utf8')).toBe('');

    const path = join(dir, 'rejects.jsonl');
    const rejects = createRejectsFile(path);
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

describe('listing spill file', () => {
  it('is removed when the listing ends and when the consumer stops early', async () => {
    const sandbox = await startSandbox({ seed: 2, studies: 1, responses: 10 });
    const client = sandboxClient(sandbox);
    try {
      const study = sandbox.studies()[0]!;
      const options = { perPage: 3, includeInProgress: true, spillDir: dir };
      for await (const _ of listResponses(client, study, options, memorySinks())) {
        expect((await readdir(dir)).length).toBe(1);
      }
      expect(await readdir(dir)).toEqual([]);
      for await (const _ of listResponses(client, study, options, memorySinks())) break;
      expect(await readdir(dir)).toEqual([]);
      expect(existsSync(dir)).toBe(true);
    } finally {
      client.close();
      await sandbox.close();
    }
  });
});
