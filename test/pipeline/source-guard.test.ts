/**
 * An output keeps to the service that wrote it: a run against another base_url stops with
 * exit 2 naming both (never the key) and changes nothing, in a folder and in a bucket;
 * --accept-new-source records the new one. The embedded sandbox is a service of its own.
 */
import { readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sourceOf } from '../../src/pipeline/source-record.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { runCli } from '../helpers/cli.ts';
import { withTempDir } from '../helpers/environment.ts';
import { S3_CREDENTIALS, type S3Server, startS3 } from '../helpers/s3.ts';

let sandbox: Sandbox;
let s3: S3Server;
beforeAll(async () => {
  sandbox = await startSandbox({ seed: 3, studies: 2, responses: 2 });
  s3 = await startS3(['guarded']);
});
afterAll(async () => {
  await sandbox.close();
  await s3.close();
});

const pipeline = (baseUrl: string) =>
  `name: acme\nsource:\n  base_url: ${baseUrl}\n  retries: 0\noutput:\n  formats: [csv]\nmedia:\n  enabled: false\n`;

describe('the service an output belongs to', () => {
  it('a folder written from the sandbox refuses a real service until the change is accepted', async () => {
    await withTempDir(async (cwd) => {
      const file = path.join(cwd, 'pipeline.yaml');
      const env = { STUDY_API_KEY: sandbox.api_key };
      await writeFile(file, pipeline('sandbox'));
      expect((await runCli(['run'], { cwd })).code).toBe(0);
      const record = path.join(cwd, 'out', 'acme', 'source.json');
      expect(JSON.parse(await readFile(record, 'utf8'))).toMatchObject({ version: 1, base_url: 'sandbox' });
      const before = {
        latest: await readFile(path.join(cwd, 'out', 'acme', 'latest'), 'utf8'),
        runs: await readdir(path.join(cwd, 'out', 'acme', 'runs')),
        state: await readdir(path.join(cwd, 'out', 'acme', 'state')),
      };

      await writeFile(file, pipeline(`${sandbox.base_url}/`));
      const requests = sandbox.requests.length;
      for (const args of [['run'], ['run', '--dry-run'], ['run', '--full']]) {
        const refused = await runCli(args, { cwd, env });
        expect(refused.code).toBe(2);
        // After the line saying what starts, the refusal (no request made: see below).
        expect(refused.stderr.split('\n').filter(Boolean).at(-1)).toBe(
          `study-export: ${path.join('out', 'acme')}: this output belongs to the embedded sandbox (${path.join('out', 'acme', 'source.json')}), but the pipeline now reads ${sandbox.base_url}; one output never mixes two services: give the new service its own pipeline name (study-export init NAME), or run with --accept-new-source if it is the same data at a new address`,
        );
        expect(refused.stderr).not.toContain(sandbox.api_key);
      }
      // Stopped before any request, and nothing moved.
      expect(sandbox.requests.length).toBe(requests);
      expect({
        latest: await readFile(path.join(cwd, 'out', 'acme', 'latest'), 'utf8'),
        runs: await readdir(path.join(cwd, 'out', 'acme', 'runs')),
        state: await readdir(path.join(cwd, 'out', 'acme', 'state')),
      }).toEqual(before);

      // A dry run with the flag still writes nothing; a run with it records the new service.
      expect((await runCli(['run', '--dry-run', '--accept-new-source'], { cwd, env })).code).toBe(0);
      expect(JSON.parse(await readFile(record, 'utf8')).base_url).toBe('sandbox');
      const accepted = await runCli(['run', '--accept-new-source'], { cwd, env });
      expect(accepted.code).toBe(0);
      expect(JSON.parse(await readFile(record, 'utf8')).base_url).toBe(sandbox.base_url);
      expect((await runCli(['run'], { cwd, env })).code).toBe(0);

      // And back to the sandbox is a change again.
      await writeFile(file, pipeline('sandbox'));
      const back = await runCli(['run'], { cwd });
      expect(back.code).toBe(2);
      expect(back.stderr).toContain(`this output belongs to ${sandbox.base_url} (`);
      expect(back.stderr).toContain('but the pipeline now reads the embedded sandbox;');
    });
  });

  it('a bucket keeps its source.json beside the runs, and the same check applies', async () => {
    await withTempDir(async (cwd) => {
      await writeFile(path.join(cwd, 'pipeline.yaml'), pipeline(sandbox.base_url));
      const env = { STUDY_API_KEY: sandbox.api_key, AWS_ENDPOINT_URL: s3.endpoint, ...S3_CREDENTIALS };
      const out = ['--out', 's3://guarded/exports'];
      expect((await runCli(['run', ...out], { cwd, env })).code).toBe(0);
      const record = JSON.parse((await s3.get('guarded', 'exports/acme/source.json')).toString());
      expect(record.base_url).toBe(sandbox.base_url);
      await writeFile(path.join(cwd, 'pipeline.yaml'), pipeline('https://studies.example.com'));
      const refused = await runCli(['run', ...out], { cwd, env });
      expect(refused.code).toBe(2);
      expect(refused.stderr).toContain(
        `this output belongs to ${sandbox.base_url} (s3://guarded/exports/acme/source.json), but the pipeline now reads https://studies.example.com;`,
      );
    });
  });

  it('records an address without credentials, query or trailing slash', () => {
    expect(sourceOf('sandbox')).toBe('sandbox');
    expect(sourceOf('https://user:secret@Studies.Example.com:443/api/v1/?token=abc#x')).toBe(
      'https://studies.example.com/api/v1',
    );
    expect(sourceOf('http://127.0.0.1:8080')).toBe('http://127.0.0.1:8080');
    expect(sourceOf('https://studies.example.com/')).toBe(sourceOf('https://studies.example.com'));
  });
});
