/**
 * The viewer on each kind of source, over HTTP: a run in a bucket (s3rver on loopback, read by
 * ranged GETs), and current/ with its recordings found in the media.zip of the run beside it
 * that exported them, or, with no runs/ beside it, no player and the reason why. Bytes served
 * are compared with what unzip extracts from the same entry. current/ carries its README.md
 * and report.html.
 */
import { cp, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Sandbox } from '../../src/sandbox/index.ts';
import { openViewData } from '../../src/view/dataset.ts';
import { startViewServer } from '../../src/view/server.ts';
import { extractEntry } from '../helpers/browser.ts';
import { withTempDir } from '../helpers/environment.ts';
import { runAgainst, sandboxConfig } from '../helpers/run.ts';
import { type S3Server, startSandboxAndS3 } from '../helpers/s3.ts';

let sandbox: Sandbox;
let s3: S3Server;
let stop: (() => Promise<void>) | undefined;

beforeAll(async () => {
  ({ sandbox, s3, stop } = await startSandboxAndS3({ seed: 33, studies: 4, responses: 2 }));
});
afterAll(() => stop?.());

/** The first archived recording's page and media paths, from the conversation page's players. */
async function firstPlayer(
  base: string,
  responseIds: Iterable<string>,
): Promise<{ page: string; media: string } | null> {
  for (const id of responseIds) {
    const page = await (await fetch(new URL(`/response/${encodeURIComponent(id)}`, base))).text();
    const src = /<audio controls preload="metadata" src="([^"]+)"/.exec(page)?.[1];
    if (src) return { page, media: src };
  }
  return null;
}

describe('study-export view', () => {
  it('serves a run in a bucket by ranged GETs, the same bytes as unzip extracts', async () => {
    await withTempDir(async (dir) => {
      const config = sandboxConfig(sandbox, 's3://exports/team', {
        output: { s3: { endpoint: s3.endpoint } },
        media: { enabled: true },
      });
      const result = await runAgainst(sandbox, config);
      const data = await openViewData(result.runDir!, { endpoint: s3.endpoint });
      expect(data.kind).toBe('run');
      expect(data.studies.map((s) => s.study_id).sort()).toEqual(
        sandbox
          .studies()
          .map((s) => s.id)
          .sort(),
      );
      const server = await startViewServer(data);
      try {
        const player = await firstPlayer(server.url, data.responses.keys());
        expect(player).not.toBeNull();
        const [, rid, turn] = /^\/media\/([^/]+)\/(\d+)\/audio$/.exec(player!.media)!;
        const row = data.media
          .get(decodeURIComponent(rid!))!
          .find((m) => m.turn === Number(turn) && m.kind === 'audio')!;
        const runId = result.runDir!.split('/').pop()!;
        const zipPath = join(dir, 'media.zip');
        await writeFile(zipPath, await s3.get('exports', `team/test/runs/${runId}/media.zip`));
        const bytes = await extractEntry(zipPath, row.file!);
        const ranged = await fetch(new URL(player!.media, server.url), { headers: { range: 'bytes=10-' } });
        expect(ranged.status).toBe(206);
        expect(Buffer.from(await ranged.arrayBuffer()).equals(bytes.subarray(10))).toBe(true);
        const whole = await fetch(new URL(player!.media, server.url));
        expect(whole.status).toBe(200);
        expect(Buffer.from(await whole.arrayBuffer()).equals(bytes)).toBe(true);
        expect(
          (await fetch(new URL(player!.media, server.url), { headers: { range: `bytes=${bytes.length}-` } }))
            .status,
        ).toBe(416);
      } finally {
        await server.close();
      }
    });
  });

  it('plays current/ recordings out of the run that exported them, and says why when there is none', async () => {
    await withTempDir(async (out) => {
      const result = await runAgainst(sandbox, sandboxConfig(sandbox, out, { media: { enabled: true } }));
      const current = join(out, 'test', 'current');
      const readme = await readFile(join(current, 'README.md'), 'utf8');
      const report = await readFile(join(current, 'report.html'), 'utf8');
      for (const study of sandbox.studies()) {
        expect(readme).toContain(`\`${study.id}\``);
        expect(report).toContain(`Study id ${study.id}.`);
      }
      const data = await openViewData(current);
      expect(data.kind).toBe('current');
      const run = await openViewData(result.runDir!);
      expect([...data.responses.keys()].sort()).toEqual([...run.responses.keys()].sort());
      const server = await startViewServer(data);
      try {
        const player = await firstPlayer(server.url, data.responses.keys());
        expect(player).not.toBeNull();
        const served = await fetch(new URL(player!.media, server.url));
        expect(served.status).toBe(200);
        const [, rid, turn] = /^\/media\/([^/]+)\/(\d+)\/audio$/.exec(player!.media)!;
        const row = data.media
          .get(decodeURIComponent(rid!))!
          .find((m) => m.turn === Number(turn) && m.kind === 'audio')!;
        const bytes = await extractEntry(join(result.runDir!, 'media.zip'), row.file!);
        expect(Buffer.from(await served.arrayBuffer()).equals(bytes)).toBe(true);
      } finally {
        await server.close();
      }

      // current/ copied alone: the tables are there, the recordings are not.
      await withTempDir(async (elsewhere) => {
        const alone = join(elsewhere, 'current');
        await cp(current, alone, { recursive: true });
        const lonely = await openViewData(alone);
        const lonelyServer = await startViewServer(lonely);
        try {
          expect(await firstPlayer(lonelyServer.url, lonely.responses.keys())).toBeNull();
          const withMedia = [...lonely.media.values()].flat().find((m) => m.status === 'archived')!;
          const page = await (
            await fetch(new URL(`/response/${encodeURIComponent(withMedia.response_id)}`, lonelyServer.url))
          ).text();
          expect(page).toContain('cannot be played here');
          expect(page).toContain('no runs/ folder beside it');
        } finally {
          await lonelyServer.close();
        }
      });
    });
  });
});
