/**
 * `study-export view` as a user runs it: bin/study-export.js in a subprocess prints the URL
 * first, serves on 127.0.0.1 (a free port, or --port), needs no key, writes nothing into the
 * run, and stops on Ctrl-C; a missing source or folder that is no run is named.
 */
import { readdir, stat } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { exitOf, runCli, spawnCli } from '../helpers/cli.ts';
import { withTempDir } from '../helpers/environment.ts';
import { runAgainst, sandboxConfig } from '../helpers/run.ts';

let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = await startSandbox({ seed: 34, studies: 2, responses: 2 });
});
afterAll(async () => {
  await sandbox.close();
});

/** Every file under `dir` with its size and modification time. */
async function snapshot(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true });
  return Promise.all(
    entries.sort().map(async (entry) => {
      const info = await stat(join(dir, entry));
      return `${entry} ${info.size} ${info.mtimeMs}`;
    }),
  );
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('study-export view', () => {
  it('prints its URL, serves the run without a key, writes nothing, and stops on Ctrl-C', async () => {
    await withTempDir(async (out) => {
      const { runDir } = await runAgainst(sandbox, sandboxConfig(sandbox, out));
      const before = await snapshot(out);
      const port = await freePort();
      const { child, firstLine } = await spawnCli(['view', runDir!, '--port', String(port)]);
      try {
        expect(firstLine).toMatch(new RegExp(`^http://127\\.0\\.0\\.1:${port}/ `));
        expect(firstLine).toContain(`${sandbox.studies().length} studies`);
        const page = await fetch(`http://127.0.0.1:${port}/`);
        expect(page.status).toBe(200);
        const html = await page.text();
        for (const study of sandbox.studies()) expect(html).toContain(study.link_id);
        expect((await fetch(`http://127.0.0.1:${port}/`, { method: 'POST' })).status).toBe(405);
      } finally {
        child.kill('SIGINT');
      }
      expect(await exitOf(child)).toBe(0);
      expect(await snapshot(out)).toEqual(before);
    });
  });

  it('names what is wrong with the source', async () => {
    const missing = await runCli(['view']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('view needs what to show');
    await withTempDir(async (dir) => {
      const notRun = await runCli(['view', dir]);
      expect(notRun.code).toBe(1);
      expect(notRun.stderr).toContain('neither a run (no manifest.json) nor a current/ dataset');
    });
  });
});
