/**
 * Every recording in media.zip is the one its name says: the sandbox writes the path it
 * served a file at into the file (src/sandbox/media.ts), so the entry
 * <link_id>/<response_id>/<turn>-<kind>.<ext> must carry the tag of the URL on that
 * response's transcript row `turn`, and no other.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { withTempDir } from '../helpers/environment.ts';
import { tagOf } from '../helpers/media-formats.ts';
import { runAgainst, sandboxConfig } from '../helpers/run.ts';
import { detailOf } from '../helpers/sandbox.ts';
import { readZip } from '../helpers/zip.ts';

let sandbox: Sandbox;

beforeAll(async () => {
  sandbox = await startSandbox({ seed: 5, studies: 3, responses: 4 });
});
afterAll(async () => {
  await sandbox.close();
});

describe('media identity', () => {
  it("stores each response's own recording under its name: audio, MP4 and every HLS segment", async () => {
    await withTempDir(async (out) => {
      const config = sandboxConfig(sandbox, out, { media: { enabled: true, video: 'both' } });
      const runDir = (await runAgainst(sandbox, config)).runDir!;
      const entries = await readZip(join(runDir, 'media.zip'), ['.mp3', '.mp4', '.ts']);
      const text = new Map(entries.map((e) => [e.name, e.text ?? '']));
      // Every file differs from every other.
      const files = entries.filter((e) => !e.name.endsWith('/') && !e.name.endsWith('.m3u8'));
      expect(new Set(files.map((e) => e.sha256)).size).toBe(files.length);

      const expected: [string, string][] = [];
      for (const study of sandbox.studies()) {
        for (const listed of sandbox.responses(study.link_id)) {
          const detail = await detailOf(sandbox, study.link_id, listed.id);
          detail.transcript.forEach((row, i) => {
            const base = `${study.link_id}/${listed.id}/${i + 1}`;
            if (row.audio) expected.push([`${base}-audio.mp3`, tagOf(row.audio)]);
            if (row.video) {
              expected.push([`${base}-video.mp4`, tagOf(row.video.mp4_url)]);
              // The sandbox's playlists list seg0.ts and seg1.ts; the archive numbers them from 1.
              for (const n of [0, 1]) {
                const segment = new URL(`seg${n}.ts`, row.video.stream_url).toString();
                expected.push([`${base}-hls/0000${n + 1}.ts`, tagOf(segment)]);
              }
            }
          });
        }
      }
      expect(expected.length).toBeGreaterThan(20);
      for (const [name, tag] of expected) {
        expect(text.has(name), name).toBe(true);
        expect(text.get(name)!.includes(tag), `${name} holds its own recording`).toBe(true);
      }
      expect(files).toHaveLength(expected.length);
    });
  });
});
