/**
 * Which turns had audio or video is in the transcript whether or not the run downloaded the
 * recordings: has_audio / has_video follow the service's detail payloads, while audio_file /
 * video_file name only what is in this run's media.zip. Read back by hyparquet and DuckDB and
 * compared turn by turn with the details fetched from the sandbox over HTTP.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { withTempDir } from '../helpers/environment.ts';
import { duckdb, readHyparquet, tableRow } from '../helpers/readers.ts';
import { runAgainst, sandboxConfig } from '../helpers/run.ts';
import { readZip } from '../helpers/zip.ts';

let sandbox: Sandbox;
/** `<response_id>/<turn>` -> what the service's detail had on that turn. */
const recordings = new Map<string, { audio: boolean; video: boolean }>();

beforeAll(async () => {
  // Text, audio and video studies.
  sandbox = await startSandbox({ seed: 29, studies: 6, responses: 3 });
  for (const study of sandbox.studies()) {
    for (const listed of sandbox.responses(study.link_id)) {
      const url = `${sandbox.base_url}/api/public/responses/${study.link_id}/${listed.id}`;
      const answer = await fetch(url, { headers: { 'x-api-key': sandbox.api_key } });
      const detail = (await answer.json()) as { transcript: { audio: unknown; video: unknown }[] };
      detail.transcript.forEach((row, i) => {
        recordings.set(`${listed.id}/${i + 1}`, { audio: row.audio !== null, video: row.video !== null });
      });
    }
  }
});
afterAll(async () => {
  await sandbox.close();
});

interface TurnMedia {
  key: string;
  has_audio: unknown;
  has_video: unknown;
  audio_file: unknown;
  video_file: unknown;
}

/** The transcript's media columns as hyparquet and as DuckDB read them (they must agree). */
async function transcriptMedia(runDir: string): Promise<TurnMedia[]> {
  const path = join(runDir, 'transcript.parquet');
  const pick = (row: Record<string, unknown>): TurnMedia => ({
    key: `${row.response_id}/${row.turn}`,
    has_audio: row.has_audio,
    has_video: row.has_video,
    audio_file: row.audio_file,
    video_file: row.video_file,
  });
  const fromHyparquet = (await readHyparquet(path)).map((row) => pick(tableRow('transcript', row)));
  const fromDuck = await duckdb((query) =>
    query(`select * from read_parquet('${path}') order by response_id, turn`),
  );
  const byKey = (a: TurnMedia, b: TurnMedia) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);
  expect(fromDuck.map((row) => pick(tableRow('transcript', row))).sort(byKey)).toEqual(
    [...fromHyparquet].sort(byKey),
  );
  return fromHyparquet;
}

describe('transcript has_audio / has_video', () => {
  it('say which turns had recordings when media is off, and point at no file', async () => {
    await withTempDir(async (out) => {
      const { runDir } = await runAgainst(
        sandbox,
        sandboxConfig(sandbox, out, { media: { enabled: false } }),
      );
      const turns = await transcriptMedia(runDir!);
      expect(turns).toHaveLength(recordings.size);
      for (const turn of turns) {
        const expected = recordings.get(turn.key);
        expect(turn, turn.key).toMatchObject({
          has_audio: expected?.audio,
          has_video: expected?.video,
          audio_file: null,
          video_file: null,
        });
      }
      expect(turns.some((t) => t.has_audio === true)).toBe(true);
      expect(turns.some((t) => t.has_video === true)).toBe(true);
      expect(turns.some((t) => t.has_audio === false && t.has_video === false)).toBe(true);
    });
  });

  it('are the same with media on, and every file named is in media.zip', async () => {
    await withTempDir(async (out) => {
      const config = sandboxConfig(sandbox, out, { media: { enabled: true } });
      const { runDir } = await runAgainst(sandbox, config);
      const turns = await transcriptMedia(runDir!);
      const entries = new Set((await readZip(join(runDir!, 'media.zip'))).map((e) => e.name));
      expect(turns).toHaveLength(recordings.size);
      for (const turn of turns) {
        const expected = recordings.get(turn.key);
        expect(turn.has_audio, turn.key).toBe(expected?.audio);
        expect(turn.has_video, turn.key).toBe(expected?.video);
        // Every recording was archived here, so a file is named exactly where there is one.
        expect(turn.audio_file !== null, turn.key).toBe(expected?.audio);
        expect(turn.video_file !== null, turn.key).toBe(expected?.video);
        for (const file of [turn.audio_file, turn.video_file]) {
          if (file !== null) expect(entries.has(String(file)), String(file)).toBe(true);
        }
      }
    });
  });
});
