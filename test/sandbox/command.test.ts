import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { describe, expect, it } from 'vitest';
import { exitOf, runCli, spawnCli } from '../helpers/cli.ts';

const entry = new URL('../../src/sandbox/index.ts', import.meta.url).href;

describe('runSandboxCommand', () => {
  it.each(['SIGTERM', 'SIGINT'] as const)(
    'prints one JSON line first, serves, and stops cleanly on %s',
    async (signal) => {
      const script = `import { runSandboxCommand } from ${JSON.stringify(entry)}; await runSandboxCommand({ seed: 7, studies: 2, responses: 3 });`;
      const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      try {
        const lines = createInterface({ input: child.stdout });
        const first = await new Promise<string>((resolve, reject) => {
          lines.once('line', resolve);
          child.once('exit', (code) => reject(new Error(`exited early with ${code}`)));
        });
        const info = JSON.parse(first) as Record<string, string>;
        expect(Object.keys(info)).toEqual(['base_url', 'api_key', 'storage_url', 'stream_url']);
        for (const key of ['base_url', 'storage_url', 'stream_url'])
          expect(info[key]).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
        const reply = await fetch(`${info['base_url']}/api/public/list_surveys`, {
          headers: { 'x-api-key': info['api_key']! },
        });
        expect(reply.status).toBe(200);
        // The key it prints sees every study it serves.
        expect(await reply.json()).toHaveLength(2);

        const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
        child.kill(signal);
        expect(await exited).toBe(0);
        await expect(fetch(`${info['base_url']}/api/public/list_surveys`)).rejects.toThrow();
      } finally {
        if (child.exitCode === null) child.kill('SIGKILL');
      }
    },
  );
});

describe('study-export sandbox --clock-offset-min', () => {
  it('serves a clock an hour behind: its Date header, and the dates of what it creates', async () => {
    const { child, firstLine } = await spawnCli([
      'sandbox',
      '--studies',
      '1',
      '--responses',
      '1',
      '--clock-offset-min',
      '-60',
    ]);
    try {
      const info = JSON.parse(firstLine) as Record<string, string>;
      const reply = await fetch(`${info['base_url']}/api/public/list_surveys`, {
        headers: { 'x-api-key': info['api_key']! },
      });
      expect(reply.status).toBe(200);
      const behind = Date.now() - Date.parse(reply.headers.get('date')!);
      expect(behind).toBeGreaterThan(59 * 60_000);
      expect(behind).toBeLessThan(61 * 60_000);
      const [study] = (await reply.json()) as { created_at: string }[];
      expect(Date.parse(study!.created_at)).toBeLessThanOrEqual(
        Date.parse(reply.headers.get('date')!) + 1000,
      );
      child.kill('SIGTERM');
      expect(await exitOf(child)).toBe(0);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });
});

describe('study-export sandbox --schema-change', () => {
  it('serves its first study changed, with a response after the change carrying it', async () => {
    const args = ['sandbox', '--seed', '7', '--studies', '2', '--responses', '3'];
    const changes = 'add-question,reword-question,add-url-parameter,add-field';
    const { child, firstLine } = await spawnCli([...args, '--schema-change', changes]);
    try {
      const info = JSON.parse(firstLine) as Record<string, string>;
      const get = async (path: string) => {
        const reply = await fetch(`${info['base_url']}/api/public/${path}`, {
          headers: { 'x-api-key': info['api_key']! },
        });
        expect(reply.status).toBe(200);
        return reply.json() as Promise<Record<string, unknown>[]>;
      };
      const [first, second] = (await get('list_surveys')) as { link_id: string; desc: string }[];
      // One response more than generated, in the changed study only.
      expect(first!.desc).toMatch(/\(4 Responses\)$/);
      expect(second!.desc).toMatch(/\(3 Responses\)$/);
      const items = await get(`responses/${first!.link_id}`);
      type Item = { answers_array: { question: string }[]; attributes: Record<string, string> };
      const [before, after] = [items[0] as unknown as Item, items.at(-1) as unknown as Item];
      // The conversations held before keep their questions; the one after is asked the changed ones.
      expect(before.answers_array).toHaveLength(6);
      expect(after.answers_array).toHaveLength(7);
      expect(after.answers_array[0]!.question).toBe(`${before.answers_array[0]!.question} Tell us more.`);
      expect(after.answers_array[6]!.question).toBe('Would you recommend it to a friend? (added question 1)');
      expect(after.attributes.campaign_1).toBe('spring-newsletter');
      expect(before.attributes.campaign_1).toBeUndefined();
      // A field the spec does not name, in every list item of the study from now on.
      expect(items.every((item) => item.sentiment_score === 0.5)).toBe(true);
      expect((await get(`responses/${second!.link_id}`)).some((item) => 'sentiment_score' in item)).toBe(
        false,
      );
      child.kill('SIGTERM');
      expect(await exitOf(child)).toBe(0);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });

  it('refuses an unknown change, naming the ones it knows (exit 2)', async () => {
    const result = await runCli(['sandbox', '--schema-change', 'add-question,drop-table']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(
      '--schema-change: unknown change "drop-table"; expected add-question, reword-question, add-url-parameter, add-field, retype-field, each optionally followed by :LINK_ID',
    );
  });
});
