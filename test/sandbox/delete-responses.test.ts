/**
 * `study-export sandbox --delete-responses`: the service as it would be after respondents'
 * deletions, over HTTP; and the user's way to see reconcile work: export, start the sandbox
 * again with a deletion, `run --reconcile`.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { exitOf, runCli, sandboxPipeline, spawnCli, workdir } from '../helpers/cli.ts';

interface Served {
  base_url: string;
  api_key: string;
}

async function serve(args: string[]): Promise<{ served: Served; stop: () => Promise<void> }> {
  const { child, firstLine } = await spawnCli(['sandbox', '--studies', '2', '--responses', '10', ...args]);
  return {
    served: JSON.parse(firstLine) as Served,
    async stop() {
      child.kill('SIGTERM');
      await exitOf(child);
    },
  };
}

async function get<T>(served: Served, path: string): Promise<T> {
  const reply = await fetch(`${served.base_url}/api/public/${path}`, {
    headers: { 'x-api-key': served.api_key },
  });
  return (await reply.json()) as T;
}

it('deletes the first N responses of the first study, or of the study named', async () => {
  const { served, stop } = await serve([]);
  const studies = await get<{ link_id: string }[]>(served, 'list_surveys');
  const ids = async (s: Served, linkId: string) =>
    (await get<{ id: string }[]>(s, `responses/${encodeURIComponent(linkId)}`)).map((r) => r.id);
  const [first, second] = await Promise.all(studies.map((study) => ids(served, study.link_id)));
  await stop();

  const changed = await serve(['--delete-responses', `1,2:${studies[1]!.link_id}`]);
  try {
    expect(await ids(changed.served, studies[0]!.link_id)).toEqual(first!.slice(1));
    expect(await ids(changed.served, studies[1]!.link_id)).toEqual(second!.slice(2));
    const listed = await get<{ link_id: string; desc: string }[]>(changed.served, 'list_surveys');
    expect(listed[0]!.desc).toMatch(/\(9 Responses\)$/);
  } finally {
    await changed.stop();
  }
});

it('refuses a count that is not one, naming the option', async () => {
  const result = await runCli(['sandbox', '--delete-responses', 'two']);
  expect(result.code).toBe(2);
  expect(result.stderr).toContain('--delete-responses: "two": expected N or N:LINK_ID');
});

it('a run --reconcile against the sandbox started again with a deletion takes it out of current/', async () => {
  const before = await serve([]);
  const work = await workdir(sandboxPipeline(before.served.base_url, { name: 'deleted', media: false }));
  try {
    const env = { STUDY_API_KEY: before.served.api_key };
    expect((await runCli(['run'], { cwd: work.dir, env })).code).toBe(0);
    await before.stop();
    const after = await serve(['--delete-responses', '1']);
    try {
      const pipeline = sandboxPipeline(after.served.base_url, { name: 'deleted', media: false });
      await writeFile(join(work.dir, 'pipeline.yaml'), pipeline);
      // Another port is another address: the same service, as --accept-new-source says.
      const result = await runCli(['run', '--reconcile', '--accept-new-source'], { cwd: work.dir, env });
      expect(result.code, result.stderr + result.stdout).toBe(0);
      expect(result.stdout).toContain('1 response the service no longer lists taken out of current/');
    } finally {
      await after.stop();
    }
  } finally {
    await work.cleanup();
  }
});
