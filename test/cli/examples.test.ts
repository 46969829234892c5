/**
 * examples/github-actions.yml: its steps, run in order in an empty working folder holding
 * only the pipeline file (as the user's repository does), export, verify, prune the older
 * runs, and leave in out/<name>/ everything the next night needs; the cache carries that whole
 * folder, so the next night finds nothing new and current/ keeps every response.
 */
import { execFile } from 'node:child_process';
import { cp, mkdir, readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { parse } from 'yaml';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { repoRoot, runCli } from '../helpers/cli.ts';
import { withTempDir } from '../helpers/environment.ts';
import { githubExpand, type WorkflowStep } from '../helpers/examples.ts';

let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = await startSandbox({ seed: 12, studies: 2, responses: 3 });
});
afterAll(async () => {
  await sandbox.close();
});

it('exports, verifies and keeps the whole output folder from night to night', async () => {
  const workflow = parse(await readFile(path.join(repoRoot, 'examples', 'github-actions.yml'), 'utf8')) as {
    env: { PIPELINE: string };
    jobs: { export: { steps: WorkflowStep[] } };
  };
  const steps = workflow.jobs.export.steps;
  const pipeline = workflow.env.PIPELINE;
  expect(steps.some((step) => /npm ci\b|npx /.test(step.run ?? ''))).toBe(false);
  expect(steps.find((step) => step.name === 'Install study-export')?.run).toContain('npm install --global');
  const cached = steps.filter((step) => /actions\/cache\/(restore|save)/.test(step.uses ?? ''));
  expect(cached.map((step) => step.with?.path)).toEqual([
    `out/\${{ env.PIPELINE }}`,
    `out/\${{ env.PIPELINE }}`,
  ]);

  await withTempDir(async (cwd) => {
    await mkdir(path.join(cwd, 'pipelines'));
    await cp(
      path.join(repoRoot, 'pipelines', `${pipeline}.yaml`),
      path.join(cwd, 'pipelines', `${pipeline}.yaml`),
    );
    const outputs: Record<string, string> = {};
    const night = async () => {
      const values: Record<string, string> = {
        'secrets.STUDY_API_KEY': sandbox.api_key,
        'vars.STUDY_API_BASE_URL': sandbox.base_url,
        'steps.run.outputs.id': '',
      };
      for (const step of steps) {
        if (step.run === undefined || step.name === 'Install study-export') continue;
        values['steps.run.outputs.id'] = outputs.id ?? '';
        const env: Record<string, string> = { PIPELINE: pipeline };
        for (const [name, value] of Object.entries(step.env ?? {}))
          env[name] = githubExpand(String(value), values);
        // The installed command is the repository's bin here (the install test covers the package).
        const outputFile = path.join(cwd, 'github-output');
        const script = `study_export() { "${process.execPath}" "${path.join(repoRoot, 'bin', 'study-export.js')}" "$@"; }\n${step.run.replaceAll('study-export ', 'study_export ')}`;
        const result = await promisify(execFile)('bash', ['-euo', 'pipefail', '-c', script], {
          cwd,
          env: { ...process.env, ...env, CI: 'true', GITHUB_OUTPUT: outputFile },
        }).catch((error: { code: number; stdout: string; stderr: string }) => error);
        expect(result.stderr, step.name).not.toMatch(/error|warning/i);
        if (step.id === 'run') {
          const line = (await readFile(outputFile, 'utf8').catch(() => '')).trim().split('\n').at(-1) ?? '';
          outputs.id = line.replace(/^id=/, '');
          expect(result.stdout).toMatch(/: ok \(checked \d+ files/);
        }
      }
    };
    await night();
    const root = path.join(cwd, 'out', pipeline);
    const first = outputs.id!;
    expect(first).toMatch(/^\d{8}T\d{6}Z$/);
    expect(await readdir(root)).toEqual(
      expect.arrayContaining(['current', 'latest', 'runs', 'source.json', 'state']),
    );
    // A second night on the same folder (what the cache restores): nothing new, nothing pruned wrongly.
    const again = await runCli(['run', '--pipeline', pipeline], {
      cwd,
      env: { STUDY_API_BASE_URL: sandbox.base_url, STUDY_API_KEY: sandbox.api_key },
    });
    expect(again.code).toBe(0);
    expect(again.stdout + again.stderr).toContain(`nothing new since run ${first}`);
    // A new response: the next night exports it, and only the newest run stays after pruning.
    sandbox.addResponse(sandbox.studies()[0]!.link_id);
    await night();
    expect(await readdir(path.join(root, 'runs'))).toEqual([outputs.id]);
    expect(await readdir(path.join(root, 'current'))).toContain('responses');
  });
});
