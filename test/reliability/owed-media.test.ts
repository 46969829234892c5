/**
 * Recordings a run did not download stay owed: after a run with --no-media, the next run
 * with media lists the studies again from where their recordings were last archived and
 * fetches every recording through fresh detail calls. Checked against the sandbox's own
 * details, entry by entry in media.zip.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { verifyRun } from '../../src/load/verify.ts';
import { readPipelineState } from '../../src/publish/state.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { withTempDir } from '../helpers/environment.ts';
import { readManifest, runAgainst, sandboxConfig } from '../helpers/run.ts';
import { readZip } from '../helpers/zip.ts';

let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = await startSandbox({ seed: 31, studies: 4, responses: 5 });
});
afterAll(async () => {
  await sandbox.close();
});

/** "<response_id>/<turn>-<kind>" of every recording the sandbox's details name (video as MP4). */
async function recordingsInSandbox(): Promise<string[]> {
  const recordings: string[] = [];
  for (const study of sandbox.studies()) {
    for (const listed of sandbox.responses(study.link_id)) {
      const url = `${sandbox.base_url}/api/public/responses/${encodeURIComponent(study.link_id)}/${encodeURIComponent(listed.id)}`;
      const detail = (await (await fetch(url, { headers: { 'x-api-key': sandbox.api_key } })).json()) as {
        transcript: { audio: string | null; video: unknown }[];
      };
      detail.transcript.forEach((row, index) => {
        if (row.audio) recordings.push(`${listed.id}/${index + 1}-audio`);
        if (row.video) recordings.push(`${listed.id}/${index + 1}-video`);
      });
    }
  }
  return recordings.sort();
}

/** The same key for each media.zip entry: <link_id>/<response_id>/<turn>-<kind>.<ext>. */
async function recordingsInZip(runDir: string): Promise<string[]> {
  const entries = await readZip(join(runDir, 'media.zip'));
  return entries
    .map((entry) =>
      entry.name
        .split('/')
        .slice(1)
        .join('/')
        .replace(/\.[^.]+$/, ''),
    )
    .sort();
}

it('a run with --no-media, then one with media: every recording ends up archived', async () => {
  await withTempDir(async (out) => {
    const expected = await recordingsInSandbox();
    expect(expected.length).toBeGreaterThan(10);
    const config = sandboxConfig(sandbox, out, { media: { enabled: true } });

    const withoutMedia = await runAgainst(sandbox, config, { media: false });
    expect(withoutMedia.status).toBe('complete');
    const state = await readPipelineState(join(out, 'test'));
    const studies = Object.values(state.studies);
    expect(studies.length).toBe(sandbox.studies().length);
    // The data watermark moved; the recordings are owed from the beginning.
    for (const study of studies) {
      expect(study.watermark).not.toBeNull();
      expect(study.media_watermark).toBeNull();
    }

    const withMedia = await runAgainst(sandbox, config);
    expect(withMedia.status).toBe('complete');
    expect(await recordingsInZip(withMedia.runDir!)).toEqual(expected);
    const manifest = await readManifest(withMedia.runDir!);
    // Listed again from the start, so each study's since is null (not the data watermark).
    expect(manifest.studies.map((s) => s.since)).toEqual(manifest.studies.map(() => null));
    expect((await verifyRun(withMedia.runDir!)).problems).toEqual([]);

    // Now nothing is owed: a third run lists from the watermark and downloads nothing.
    const after = await readPipelineState(join(out, 'test'));
    for (const study of Object.values(after.studies)) expect(study.media_watermark).toBe(study.watermark);
    const from = sandbox.requests.length;
    const third = await runAgainst(sandbox, config);
    // Nothing new and nothing owed: no run is written.
    expect(third.status).toBe('unchanged');
    const requests = sandbox.requests.slice(from);
    expect(requests.filter((r) => r.listener !== 'api')).toEqual([]);
    const pages = requests.filter((r) => r.path.includes('page='));
    expect(pages).toHaveLength(sandbox.studies().length);
    for (const page of pages) expect(page.path).toContain('updated_since=');
    expect(requests).toHaveLength(1 + sandbox.studies().length);
  });
});
