/**
 * `study-export init`: the file it writes is the one `run` then reads; it never overwrites
 * a file, never waits for input, and `run` without a pipeline file points to it.
 */
import { spawn } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadPipeline } from '../../src/config/load.ts';
import { PipelineConfig } from '../../src/config/schema.ts';
import { cleanEnv, exitOf, repoRoot, runCli } from '../helpers/cli.ts';
import { withTempDir } from '../helpers/environment.ts';

describe('study-export init', () => {
  it('writes pipelines/NAME.yaml with the defaults, which run then exports', async () => {
    await withTempDir(async (cwd) => {
      const init = await runCli(['init', 'acme'], { cwd });
      expect(init).toEqual({
        code: 0,
        stdout:
          'wrote pipelines/acme.yaml: pipeline "acme" for the embedded sandbox (no key, no network)\nnext: study-export run --pipeline acme\n',
        stderr: '',
      });
      const { config } = await loadPipeline({ pipeline: 'acme', cwd, env: {} });
      expect(config).toEqual(PipelineConfig.parse({ name: 'acme' }));
      const run = await runCli(['run', '--pipeline', 'acme', '--no-media', '--formats', 'csv'], { cwd });
      expect(run.code).toBe(0);
      expect(await readFile(path.join(cwd, 'out', 'acme', 'latest'), 'utf8')).toMatch(/^\d{8}T\d{6}Z/);
    });
  });

  it('writes ./pipeline.yaml named after the folder without NAME, and a service URL given with --base-url', async () => {
    await withTempDir(async (parent) => {
      const cwd = path.join(parent, 'Acme exports');
      await mkdir(cwd);
      expect((await runCli(['init'], { cwd })).code).toBe(0);
      expect((await loadPipeline({ cwd, env: {} })).config.name).toBe('Acme-exports');
      const init = await runCli(['init', 'prod.yaml', '--base-url', 'https://studies.example.com/api'], {
        cwd,
      });
      expect(init.stdout).toBe(
        'wrote pipelines/prod.yaml: pipeline "prod" for https://studies.example.com/api, key from $STUDY_API_KEY\n' +
          'next: export STUDY_API_KEY=..., then study-export validate --pipeline prod, study-export run --pipeline prod --dry-run\n',
      );
      const { config } = await loadPipeline({ pipeline: 'prod', cwd, env: {} });
      expect(config.source.base_url).toBe('https://studies.example.com/api');
    });
  });

  it('never overwrites a file (exit 2, the file as it was) and rejects a bad name or URL', async () => {
    await withTempDir(async (cwd) => {
      expect((await runCli(['init', 'acme'], { cwd })).code).toBe(0);
      const file = path.join(cwd, 'pipelines', 'acme.yaml');
      await writeFile(file, 'name: acme # edited\n');
      const again = await runCli(['init', 'acme'], { cwd });
      expect(again.code).toBe(2);
      expect(again.stderr).toBe(
        'study-export: pipelines/acme.yaml already exists: init never overwrites a pipeline file (edit it, remove it, or give another name)\n',
      );
      expect(await readFile(file, 'utf8')).toBe('name: acme # edited\n');
      const badName = await runCli(['init', '../up'], { cwd });
      expect(badName.code).toBe(2);
      expect(badName.stderr).toContain(
        'init NAME: expected letters, digits, ".", "_" or "-" (it names a folder), found "../up"',
      );
      const badUrl = await runCli(['init', 'x', '--base-url', 'studies.example.com'], { cwd });
      expect(badUrl.code).toBe(2);
      expect(badUrl.stderr).toContain(
        '--base-url: expected "sandbox" or an http:// or https:// URL, found "studies.example.com"',
      );
    });
  });

  it('asks nothing: with stdin open and silent it finishes', async () => {
    await withTempDir(async (cwd) => {
      const child = spawn(
        process.execPath,
        [path.join(repoRoot, 'bin', 'study-export.js'), 'init', 'quiet'],
        {
          cwd,
          env: cleanEnv(),
          stdio: ['pipe', 'ignore', 'ignore'],
        },
      );
      expect(await exitOf(child)).toBe(0);
      child.stdin?.end();
      expect((await loadPipeline({ pipeline: 'quiet', cwd, env: {} })).config.name).toBe('quiet');
    });
  });

  it('run, validate and studies without a pipeline file point to init', async () => {
    await withTempDir(async (cwd) => {
      for (const command of ['run', 'validate', 'studies']) {
        const result = await runCli([command], { cwd });
        expect(result.code).toBe(2);
        expect(result.stderr).toBe(
          'study-export: pipeline.yaml: cannot read the pipeline file (no such file); `study-export init` writes one (`study-export init NAME` writes pipelines/NAME.yaml)\n',
        );
      }
      const named = await runCli(['run', '--pipeline', 'nightly'], { cwd });
      expect(named.code).toBe(2);
      expect(named.stderr).toBe(
        'study-export: no pipeline named "nightly": pipelines/nightly.yaml not found (available: none); `study-export init nightly` writes one\n',
      );
    });
  });
});
