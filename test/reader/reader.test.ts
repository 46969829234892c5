/**
 * The output reader on real outputs of the sandbox: a folder written by three runs (audio, MP4
 * and HLS archived; a response re-exported without media; one whose recording then failed),
 * and a bucket on s3rver. Studies resolve by id and link_id; current/ rows equal what the
 * service lists; every recording is found in the run that archived it, its bytes equal what
 * unzip extracts from that run's media.zip and its sha256 the media row's.
 */
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.ts';
import {
  CURRENT_README,
  CURRENT_REPORT,
  type Found,
  OutputReader,
  type Recording,
} from '../../src/reader/index.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { extractEntry } from '../helpers/browser.ts';
import { withTempDir } from '../helpers/environment.ts';
import { runAgainst, sandboxConfig } from '../helpers/run.ts';
import { startSandboxAndS3 } from '../helpers/s3.ts';

let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = await startSandbox({ seed: 7, studies: 4, responses: 4 });
});
afterAll(() => sandbox?.close());

async function bytesOf(found: Found): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of await found.zip.open(found.entry)) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

async function allRecordings(output: OutputReader, study: string): Promise<Recording[]> {
  const list: Recording[] = [];
  for await (const group of (await output.study(study)).recordings()) list.push(...group);
  return list;
}

/** The first study whose responses carry `modality` (the sandbox rotates text, audio, video). */
async function studyOf(
  at: string | OutputReader,
  modality: string,
): Promise<{ id: string; link_id: string }> {
  const output = typeof at === 'string' ? await OutputReader.open(at) : at;
  for (const study of await output.studies()) {
    const responses = await (await output.study(study.study_id)).all('responses');
    if (responses.some((r) => r.modality === modality)) return { id: study.study_id, link_id: study.link_id };
  }
  throw new Error(`no ${modality} study`);
}

describe('the output reader', () => {
  it('reads runs, current/ by study, and each recording from the run that archived it', async () => {
    await withTempDir(async (out) => {
      const media = { media: { enabled: true, video: 'both' } };
      const first = await runAgainst(sandbox, sandboxConfig(sandbox, out, media));
      const audio = await studyOf(join(out, 'test'), 'audio');
      const video = await studyOf(join(out, 'test'), 'video');
      const withAudio = (await (await OutputReader.open(join(out, 'test'))).study(audio.id)).all('media');
      const [quiet] = [...new Set((await withAudio).map((m) => m.response_id))].sort();
      expect(quiet).toBeDefined();
      sandbox.clock.advance(60_000);
      sandbox.touchResponse(audio.link_id, quiet!);
      const second = await runAgainst(sandbox, sandboxConfig(sandbox, out));
      const quietOnly = await OutputReader.open(join(out, 'test'));
      for (const recording of await allRecordings(quietOnly, audio.id)) {
        if (recording.response_id !== quiet) continue;
        expect(recording.row).toBeNull();
        expect((recording.located as Found).runId).toBe(first.runDir!.split('/').at(-1));
        expect(recording.note).toContain('exported without media');
      }
      sandbox.clock.advance(60_000);
      const failing = sandbox.addResponse(audio.link_id);
      sandbox.overrideNext({ listener: 'storage' }, { status: 404, body: 'gone' }, 1000);
      const third = await runAgainst(sandbox, sandboxConfig(sandbox, out, media));
      expect(third.status).toBe('partial');
      const ids = [first, second, third].map((r) => r.runDir!.split('/').at(-1)!);

      const output = await OutputReader.open(join(out, 'test'));
      expect((await output.runs()).map((run) => run.id)).toEqual([...ids].reverse());
      expect(await output.latest()).toEqual([{ pointer: 'latest', runId: ids[2] }]);
      expect(await output.pendingRuns()).toEqual([]);
      expect((await output.studies()).map((s) => s.study_id).sort()).toEqual(
        sandbox
          .studies()
          .map((s) => s.id)
          .sort(),
      );
      expect((await output.resolveStudy(audio.link_id)).study_id).toBe(audio.id);
      expect((await output.resolveStudy(audio.id)).link_id).toBe(audio.link_id);
      const unknown = await output.resolveStudy('no-such-study').catch((error: unknown) => error);
      expect(unknown).toBeInstanceOf(ConfigError);
      expect((unknown as Error).message).toContain(`${audio.link_id} (${audio.id})`);

      const study = await output.study(audio.link_id);
      expect((await study.all('responses')).map((r) => r.response_id).sort()).toEqual(
        sandbox
          .responses(audio.link_id)
          .map((r) => r.id)
          .sort(),
      );
      for (const table of ['answers', 'transcript', 'questions', 'media'] as const) {
        const rows = await study.all(table);
        expect(rows.length).toBeGreaterThan(0);
        expect(rows.every((row) => row.study_id === audio.id)).toBe(true);
      }
      expect((await output.current.guide(CURRENT_README))?.toString('utf8')).toContain(`\`${audio.id}\``);
      expect((await output.current.guide(CURRENT_REPORT))?.toString('utf8')).toContain('<html');

      const recordings = await allRecordings(output, audio.id);
      const byResponse = (id: string) => recordings.filter((r) => r.response_id === id);
      // Owed its recordings after the run without media, whose downloads then failed: the
      // first run's copy, with a note.
      expect(byResponse(quiet!).length).toBeGreaterThan(0);
      for (const recording of byResponse(quiet!)) {
        expect(recording.row?.status).toBe('failed');
        expect((recording.located as Found).runId).toBe(ids[0]);
        expect(recording.note).toMatch(/the download failed: .*404.*; this is the copy run \S+ archived/);
      }
      // New, and its download failed: listed, with the reason.
      expect(byResponse(failing).length).toBeGreaterThan(0);
      for (const recording of byResponse(failing)) {
        expect(recording.row?.status).toBe('failed');
        expect(recording.note).toBeNull();
        expect('reason' in recording.located && recording.located.reason).toMatch(
          /the download failed: .*404/,
        );
      }
      const others = recordings.filter((r) => r.response_id !== quiet && r.response_id !== failing);
      expect(others.length).toBeGreaterThan(0);
      for (const recording of [...others, ...byResponse(quiet!)]) {
        const found = recording.located as Found;
        expect(found.runId).toBe(ids[0]);
        const bytes = await bytesOf(found);
        expect(bytes.equals(await extractEntry(join(first.runDir!, 'media.zip'), found.row.file!))).toBe(
          true,
        );
        expect(sha256(bytes)).toBe(found.row.sha256);
      }

      const videos = await allRecordings(output, video.id);
      expect(new Set(videos.map((r) => r.kind))).toEqual(new Set(['video', 'hls']));
      for (const recording of videos.filter((r) => r.kind === 'hls')) {
        const found = recording.located as Found;
        const segments = await found.zip.segments(found.entry);
        expect(segments.map((s) => s.name.split('/').at(-1))).toEqual(['00001.ts', '00002.ts']);
        for (const segment of segments) {
          const chunks: Buffer[] = [];
          for await (const chunk of await found.zip.open(segment)) chunks.push(chunk as Buffer);
          expect(
            Buffer.concat(chunks).equals(await extractEntry(join(first.runDir!, 'media.zip'), segment.name)),
          ).toBe(true);
        }
      }

      const run = (await output.run(ids[0]!))!;
      expect(run.rawFiles().map((f) => f.path)).toContain('raw/get_response.jsonl.gz');
      expect(run.manifest.run_id).toBe(ids[0]);
    });
  });

  it('reads an output in a bucket the same way', async () => {
    const { sandbox: own, s3, stop } = await startSandboxAndS3({ seed: 8, studies: 3, responses: 2 });
    try {
      const config = sandboxConfig(own, 's3://exports/team', {
        output: { s3: { endpoint: s3.endpoint } },
        media: { enabled: true },
      });
      const result = await runAgainst(own, config);
      const output = await OutputReader.open('s3://exports/team/test', { endpoint: s3.endpoint });
      expect((await output.runs()).map((run) => run.id)).toEqual([result.runDir!.split('/').at(-1)]);
      const recordings = await allRecordings(output, (await studyOf(output, 'audio')).link_id);
      expect(recordings.length).toBeGreaterThan(0);
      for (const recording of recordings) {
        const found = recording.located as Found;
        expect(sha256(await bytesOf(found))).toBe(recording.row!.sha256);
      }
    } finally {
      await stop();
    }
  });
});
