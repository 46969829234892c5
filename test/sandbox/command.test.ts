import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { describe, expect, it } from 'vitest';
import { exitOf, spawnCli } from '../helpers/cli.ts';

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
