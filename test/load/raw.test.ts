/** raw/*.jsonl.gz: every payload as received, one gzipped JSON-lines file per operation. */
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createRawArchive } from '../../src/load/raw.ts';
import type { RawRecord } from '../../src/records.ts';
import { localFile } from '../helpers/storage.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'study-export-test-'));
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
    const archive = createRawArchive(...localFile(join(dir, 'raw')));
    const written: RawRecord[] = [];
    for (let n = 0; n < 500; n++) {
      const r = record(n % 3 === 0 ? 'get_response' : 'list_responses', n);
      archive.write(r);
      written.push(r);
    }
    const paths = await archive.close();
    expect(paths.sort()).toEqual(['raw/get_response.jsonl.gz', 'raw/list_responses.jsonl.gz']);
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

  it('stores a body received on one line of UTF-8 as its bytes, and any other as the payload written out', async () => {
    const archive = createRawArchive(...localFile(join(dir, 'raw')));
    const base = record('get_response', 0);
    // As a service may send it: an escaped character and spaces, which JSON.stringify would not write.
    const asSent = '{ "n": 1, "text": "caf\\u00e9 \\"quoted\\"" }';
    const payload = JSON.parse(asSent);
    const cases = [
      Buffer.from(asSent), // one line: stored as it is
      Buffer.from(asSent.replace(', ', ',\n')), // a line break between tokens
      Buffer.from(asSent.replace(', ', ',\r')), // a carriage return, which line readers split on too
      Buffer.concat([Buffer.from(asSent.slice(0, -2)), Buffer.from([0xff]), Buffer.from(' }')]), // not UTF-8
    ];
    for (const bytes of cases) archive.write({ ...base, payload }, bytes);
    archive.write({ ...base, payload }); // no bytes at all
    await archive.close();
    const text = gunzipSync(await readFile(join(dir, 'raw', 'get_response.jsonl.gz'))).toString('utf8');
    const lines = text.split('\n');
    expect(lines.at(-1)).toBe('');
    expect(lines).toHaveLength(cases.length + 2);
    for (const line of lines.slice(0, -1)) {
      expect(line).not.toContain('\r');
      expect(JSON.parse(line)).toEqual({ ...base, payload });
    }
    expect(lines[0]).toContain(`"payload":${asSent}}`);
    for (const line of lines.slice(1, -1)) expect(line).toContain(`"payload":${JSON.stringify(payload)}}`);
  });

  it('drained() waits while megabytes are queued for gzip, and nothing queued is lost', async () => {
    const archive = createRawArchive(...localFile(join(dir, 'raw')));
    const written: RawRecord[] = [];
    const isPending = async (promise: Promise<void>) =>
      Promise.race([
        promise.then(() => false),
        new Promise<boolean>((resolve) => setImmediate(() => resolve(true))),
      ]);
    // Nothing queued yet: drained at once.
    expect(await isPending(archive.drained())).toBe(false);
    // About 16 MB written in one go, faster than gzip can take it (as a replay reads records).
    for (let n = 0; n < 400; n++) {
      const r = { ...record('get_response', n), payload: { n, text: randomText(40_000) } };
      archive.write(r);
      written.push(r);
    }
    const drained = archive.drained();
    expect(await isPending(drained)).toBe(true);
    await drained;
    expect(await isPending(archive.drained())).toBe(false);
    await archive.close();
    const text = gunzipSync(await readFile(join(dir, 'raw', 'get_response.jsonl.gz'))).toString('utf8');
    expect(
      text
        .trimEnd()
        .split('\n')
        .map((line) => JSON.parse(line)),
    ).toEqual(written);
  });
});

/** Text gzip cannot shrink much, so compressing it takes a while. */
function randomText(length: number): string {
  return randomBytes(length).toString('base64').slice(0, length);
}
