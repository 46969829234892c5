/**
 * Media end to end: signed links that expire while the run is under way, a storage host
 * refusing a link once, and faults on the media hosts. Every file is archived, the zip
 * reads back with the media table's sha256s, and the media hosts never see the key.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyRun } from '../../src/load/verify.ts';
import type { MediaCounters } from '../../src/media/stage.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { expectMediaRequestsKeyless, withTempDir } from '../helpers/environment.ts';
import { readHyparquet } from '../helpers/readers.ts';
import { detailRequests, readManifest, runAgainst, sandboxConfig, waitFor } from '../helpers/run.ts';
import {
  expectEveryResponseOnce,
  expectNoSecretIn,
  readRejects,
  sandboxResponseIds,
} from '../helpers/run-files.ts';
import { readZip } from '../helpers/zip.ts';

let sandbox: Sandbox;

beforeAll(async () => {
  // Four studies: the primary key sees a text, an audio and a video study.
  sandbox = await startSandbox({ seed: 31, studies: 4, responses: 6, latencyMs: 10 });
});
afterAll(async () => {
  await sandbox.close();
});

const settings = {
  source: { concurrency: 2, retries: 6 },
  media: { enabled: true, concurrency: 2 },
  incremental: false,
};

/** Every media row archived, each in the zip with its sha256; the counters from the manifest. */
async function expectAllMediaArchived(runDir: string): Promise<MediaCounters> {
  const media = await readHyparquet(join(runDir, 'media.parquet'));
  expect(media.length).toBeGreaterThan(0);
  expect(media.filter((row) => row.status !== 'archived')).toEqual([]);
  const entries = new Map((await readZip(join(runDir, 'media.zip'))).map((e) => [e.name, e]));
  for (const row of media)
    expect(entries.get(row.file as string)?.sha256, row.file as string).toBe(row.sha256);
  expect(entries.size).toBe(media.length);
  expect((await verifyRun(runDir)).problems).toEqual([]);
  const manifest = await readManifest(runDir);
  return manifest.media as MediaCounters;
}

async function expectLossless(out: string, runDir: string, from: number): Promise<void> {
  await expectEveryResponseOnce(runDir, sandboxResponseIds(sandbox));
  expect(await readRejects(runDir)).toEqual([]);
  expect(expectMediaRequestsKeyless(sandbox, from)).toBeGreaterThan(0);
  await expectNoSecretIn(out, sandbox.api_key);
}

describe('media links', () => {
  it('links that expire mid-run (the clock jumps past an hour) are refreshed; every file is archived', async () => {
    await withTempDir(async (out) => {
      const from = sandbox.requests.length;
      sandbox.setFaults('media_latency=15ms');
      try {
        const running = runAgainst(sandbox, sandboxConfig(sandbox, out, settings));
        // Once downloads have begun, the links of every detail fetched so far are an hour old.
        const mediaStarted = () => sandbox.requests.slice(from).some((r) => r.listener !== 'api');
        await waitFor(() => detailRequests(sandbox, from) >= 3 && mediaStarted(), 'the first downloads');
        sandbox.clock.advance(61 * 60 * 1000);
        const result = await running;
        expect(result.status).toBe('complete');
        const counters = await expectAllMediaArchived(result.runDir!);
        expect(counters.refreshes).toBeGreaterThan(0);
        expect(counters.failed).toBe(0);
        // The expired links were really refused before they were renewed.
        const refused = sandbox.requests.slice(from).filter((r) => r.listener !== 'api' && r.status === 403);
        expect(refused.length).toBeGreaterThan(0);
        await expectLossless(out, result.runDir!, from);
      } finally {
        sandbox.setFaults(null);
      }
    });
  });

  it('storage answering 403 once, then 200 after a refresh: archived, one refresh counted', async () => {
    await withTempDir(async (out) => {
      const from = sandbox.requests.length;
      sandbox.overrideNext({ listener: 'storage' }, { status: 403, body: 'Request has expired' });
      const result = await runAgainst(sandbox, sandboxConfig(sandbox, out, settings));
      expect(result.status).toBe('complete');
      const counters = await expectAllMediaArchived(result.runDir!);
      expect(counters.refreshes).toBe(1);
      const storage = sandbox.requests.slice(from).filter((r) => r.listener === 'storage');
      expect(storage[0]?.status).toBe(403);
      await expectLossless(out, result.runDir!, from);
    });
  });

  it('5xx, 429, resets and truncated bodies on the media hosts: every file archived with the right bytes', async () => {
    await withTempDir(async (out) => {
      const from = sandbox.requests.length;
      sandbox.setFaults('media_5xx=0.1,media_429=0.05,media_reset=0.05,media_truncate=0.1,retry_after=0');
      try {
        const result = await runAgainst(sandbox, sandboxConfig(sandbox, out, settings));
        expect(result.status).toBe('complete');
        const counters = await expectAllMediaArchived(result.runDir!);
        expect(Object.values(counters.retries).reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
        await expectLossless(out, result.runDir!, from);
      } finally {
        sandbox.setFaults(null);
      }
    });
  });
});
