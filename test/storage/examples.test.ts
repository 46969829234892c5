/**
 * examples/github-actions-s3.yml: the commands it runs, with the environment it sets, export
 * to a bucket (s3rver on loopback, AWS_ENDPOINT_URL as a user of an S3-compatible server
 * would set it) and verify the run there; no step caches anything.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { parse } from 'yaml';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { runTableNames } from '../../src/tables/index.ts';
import { repoRoot, runCli } from '../helpers/cli.ts';
import { commandLine, githubExpand, shellWords, type WorkflowStep } from '../helpers/examples.ts';
import { S3_CREDENTIALS, type S3Server, startS3 } from '../helpers/s3.ts';

let sandbox: Sandbox;
let s3: S3Server;
beforeAll(async () => {
  sandbox = await startSandbox({ seed: 8, studies: 2, responses: 3 });
  s3 = await startS3(['acme-exports']);
});
afterAll(async () => {
  await sandbox.close();
  await s3.close();
});

it('exports to the bucket and verifies the run there, with no cache step', async () => {
  const workflow = parse(
    await readFile(path.join(repoRoot, 'examples', 'github-actions-s3.yml'), 'utf8'),
  ) as {
    env: Record<string, string>;
    jobs: { export: { steps: WorkflowStep[] } };
  };
  const steps = workflow.jobs.export.steps;
  expect(steps.filter((step) => /actions\/(cache|upload-artifact)/.test(step.uses ?? ''))).toEqual([]);
  // The package is installed, not a clone's dependencies; the bucket's region is a setting.
  expect(steps.some((step) => /npm ci\b|npx /.test(step.run ?? ''))).toBe(false);
  expect(steps.find((step) => step.name === 'Install study-export')?.run).toContain('npm install --global');
  const aws = steps.find((step) => /configure-aws-credentials/.test(step.uses ?? ''))!;
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a GitHub expression, as the workflow writes it
  expect(aws.with?.['aws-region']).toBe('${{ vars.AWS_REGION }}');
  const values = {
    'vars.STUDY_EXPORT_BUCKET': 'acme-exports',
    'vars.STUDY_API_BASE_URL': sandbox.base_url,
    'secrets.STUDY_API_KEY': sandbox.api_key,
  };
  const envOf = (step: WorkflowStep): Record<string, string> => ({
    ...workflow.env,
    ...Object.fromEntries(
      Object.entries(step.env ?? {}).map(([name, value]) => [name, githubExpand(String(value), values)]),
    ),
    AWS_ENDPOINT_URL: s3.endpoint,
    ...S3_CREDENTIALS,
  });
  const exportStep = steps.find((step) => /study-export run/.test(step.run ?? ''))!;
  const env = envOf(exportStep);
  const words = shellWords(commandLine(exportStep.run!, 'run'), env);
  expect(words[0]).toBe('study-export');
  const exported = await runCli(words.slice(1), { env: { ...env, STUDY_API_BASE_URL: sandbox.base_url } });
  expect(exported.stderr).not.toMatch(/warning/i);
  expect(exported.code).toBe(0);

  // The verify step: `aws s3 cp …/latest -` is read here with the SDK.
  const verifyStep = steps.find((step) => /study-export verify/.test(step.run ?? ''))!;
  const runId = (await s3.get('acme-exports', `study-export/${env.PIPELINE}/latest`)).toString().trim();
  const verifyLine = verifyStep.run!.split('\n').find((line) => line.includes('study-export verify'))!;
  const verifyWords = shellWords(verifyLine.trim(), { ...envOf(verifyStep), run_id: runId });
  expect(verifyWords[2]).toBe(`s3://acme-exports/study-export/${env.PIPELINE}/runs/${runId}`);
  const verified = await runCli(verifyWords.slice(1), { env: envOf(verifyStep) });
  // nightly-incremental.yaml writes every run table as CSV and as Parquet.
  const tableFiles = runTableNames.length * 2;
  expect(verified.stdout).toMatch(
    new RegExp(`: ok \\(checked \\d+ files, ${tableFiles} tables, \\d+ rows, \\d+ zip entries\\)`),
  );
  expect(verified.code).toBe(0);
  // The state is in the bucket, beside the runs: one object per study the run finished.
  const root = `study-export/${env.PIPELINE}`;
  const manifest = JSON.parse(
    (await s3.get('acme-exports', `${root}/runs/${runId}/manifest.json`)).toString(),
  ) as {
    studies: { study_id: string; lossless: boolean }[];
  };
  expect(manifest.studies.length).toBeGreaterThan(0);
  expect(await s3.keys('acme-exports', `${root}/state/`)).toEqual(
    manifest.studies
      .filter((s) => s.lossless)
      .map((s) => `${root}/state/${s.study_id}.json`)
      .sort(),
  );
});
