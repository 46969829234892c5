/**
 * A run's raw/ as a client (what `replay` reads): each call answers with the recorded line's
 * payload as it was stored, read as the live client reads a body.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { RunError } from '../../src/errors.ts';
import { createRawArchive } from '../../src/load/raw.ts';
import type { RawRecord } from '../../src/records.ts';
import { openRecordedSource } from '../../src/replay/recorded-source.ts';
import { withTempDir } from '../helpers/environment.ts';
import { localFolder } from '../helpers/storage.ts';

const base = 'http://127.0.0.1:1';

/** A raw line of raw/'s shape (the record's other keys, then the payload last), by hand: damaged ones too. */
function line(head: Record<string, unknown>, payload: string): string {
  return `${JSON.stringify(head).slice(0, -1)},"payload":${payload}}`;
}

function head(operation: string, extra: Record<string, unknown>) {
  return {
    operation,
    ...extra,
    url: `${base}/api/public/x`,
    status: 200,
    received_at: '2026-11-01T00:00:00.000Z',
  };
}

async function writeRaw(rawDir: string, files: Record<string, string[]>): Promise<void> {
  await mkdir(rawDir, { recursive: true });
  for (const [name, lines] of Object.entries(files)) {
    await writeFile(join(rawDir, `${name}.jsonl.gz`), gzipSync(`${lines.join('\n')}\n`));
  }
}

describe('recorded source', () => {
  it('answers with the payload bytes as stored: a detail parsed whole, a listing page element by element', async () => {
    await withTempDir(async (dir) => {
      // As a service may send them: spaces and escapes that JSON.stringify would not write.
      const detail = '{ "id" : "r1", "survey": "s", "transcript": [], "note": "caf\\u00e9" }';
      const page = '[ {"id": "r1", "n": 1} , {"id": "r2", "n": "\\"two\\""} ]';
      const pageHead = head('list_responses', {
        link_id: 's',
        study_id: 'study-1',
        page: 0,
        query: { page: '0', per_page: '1000' },
      });
      // Written by raw/'s own writer, as a run writes them: the bodies as received.
      const archive = createRawArchive(localFolder(dir), 'raw');
      const record = (recordHead: object, body: string) =>
        ({ ...recordHead, payload: JSON.parse(body) }) as RawRecord;
      archive.write(record(head('list_surveys', {}), '[]'), Buffer.from('[]'));
      archive.write(record(pageHead, page), Buffer.from(page));
      const detailHead = head('get_response', { link_id: 's', study_id: 'study-1', response_id: 'r1' });
      archive.write(record(detailHead, detail), Buffer.from(detail));
      await archive.close();
      const source = await openRecordedSource(join(dir, 'raw'), base);
      try {
        expect(source.studyIds).toEqual(['study-1']);
        const one = await source.client.getResponse('s', 'r1');
        expect(one.payload).toEqual(JSON.parse(detail));
        expect(Buffer.from(one.json?.bytes ?? []).toString()).toBe(detail);
        expect(one.json?.of).toBe(one.payload);
        expect(one).toMatchObject({
          url: `${base}/api/public/x`,
          status: 200,
          receivedAt: '2026-11-01T00:00:00.000Z',
        });

        const listed = await source.client.listResponses('s', {
          page: 0,
          perPage: 1000,
          includeInProgress: true,
        });
        expect(listed.payload).toBeUndefined();
        expect(listed.query).toEqual({ page: '0', per_page: '1000' });
        expect(Buffer.from(listed.json?.bytes ?? []).toString()).toBe(page);
        const elements = listed.elements;
        expect(elements?.length).toBe(2);
        expect([0, 1].map((i) => elements?.element(i))).toMatchObject([
          { ok: true, value: { id: 'r1', n: 1 } },
          { ok: true, value: { id: 'r2', n: '"two"' } },
        ]);
      } finally {
        await source.close();
      }
    });
  });

  it('reads a line whose payload is not last whole, and names the file of a line that is not JSON', async () => {
    await withTempDir(async (dir) => {
      const reordered = JSON.stringify({
        payload: { id: 'r1', survey: 's', transcript: [] },
        ...head('get_response', { link_id: 's', study_id: 'study-1', response_id: 'r1' }),
      });
      const damaged = `${line(head('get_response', { link_id: 's', study_id: 'study-1', response_id: 'r2' }), '{"id": "r2", ')}`;
      await writeRaw(join(dir, 'raw'), { get_response: [reordered, damaged] });
      const source = await openRecordedSource(join(dir, 'raw'), base);
      try {
        const one = await source.client.getResponse('s', 'r1');
        expect(one.payload).toEqual({ id: 'r1', survey: 's', transcript: [] });
        expect(one.json).toBeUndefined();
        const failure = await source.client.getResponse('s', 'r2').catch((error: unknown) => error);
        expect(failure).toBeInstanceOf(RunError);
        expect((failure as Error).message).toBe(
          `${join(dir, 'raw', 'get_response.jsonl.gz')} (response "r2" of study "s"): a line is not JSON; raw/ is damaged`,
        );
      } finally {
        await source.close();
      }
    });
  });
});
