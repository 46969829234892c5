/**
 * examples/: the GitHub Actions matrix workflow and the Kubernetes Indexed Job parse as
 * YAML, and the command line each one runs, with the environment it sets, is accepted by
 * the CLI: run as a dry run against the sandbox, the N shards take every study exactly once.
 * Their buckets are served by s3rver on loopback (a dry run reads the state kept there).
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { repoRoot, runCli } from '../cli/helpers.ts';
import { S3_CREDENTIALS, type S3Server, startS3 } from '../storage/s3rver.ts';

let sandbox: Sandbox;
let s3: S3Server;
beforeAll(async () => {
  sandbox = await startSandbox({ seed: 5, studies: 9, responses: 1 });
  s3 = await startS3(['test-bucket', 'your-bucket']);
});
afterAll(async () => {
  await sandbox.close();
  await s3.close();
});

interface Step {
  run?: string;
  env?: Record<string, string>;
}
interface Workflow {
  jobs: { export: { strategy: { matrix: { shard: number[] } }; steps: Step[] } };
}
interface IndexedCronJob {
  spec: {
    jobTemplate: {
      spec: {
        completionMode: string;
        completions: number;
        template: {
          spec: {
            containers: { command: string[]; args: string[]; env: { name: string; value?: string }[] }[];
          };
        };
      };
    };
  };
}

const example = async <T>(name: string) =>
  parse(await readFile(path.join(repoRoot, 'examples', name), 'utf8')) as T;

/** Words of a one-line shell command: "..." quoting and $VAR expansion, nothing more. */
function shellWords(command: string, env: Record<string, string>): string[] {
  const words: string[] = [];
  for (const match of command.matchAll(/"((?:[^"\\]|\\.)*)"|(\S+)/g)) {
    const word = (match[1] ?? match[2])!;
    words.push(word.replace(/\$\{?([A-Z_][A-Z0-9_]*)\}?/g, (_, name: string) => env[name] ?? ''));
  }
  return words;
}

/** Fills in GitHub expressions (${{ matrix.shard }} and the like) from a table. */
function githubExpand(text: string, values: Record<string, string>): string {
  return text.replace(/\$\{\{\s*([^}]+?)\s*\}\}/g, (_, expression: string) => {
    const value = values[expression];
    if (value === undefined) throw new Error(`no test value for \${{ ${expression} }}`);
    return value;
  });
}

/** The study ids in a dry run's table. */
function plannedStudies(stdout: string): string[] {
  const ids = new Set(sandbox.studies().map((study) => study.id));
  return stdout
    .split('\n')
    .map((line) => line.trim().split(/\s+/)[0] ?? '')
    .filter((word) => ids.has(word));
}

const sandboxEnv = () => ({
  STUDY_API_BASE_URL: sandbox.base_url,
  STUDY_API_KEY: sandbox.api_key,
  AWS_ENDPOINT_URL: s3.endpoint,
  ...S3_CREDENTIALS,
});

function expectEveryStudyOnce(taken: string[][]): void {
  expect(taken.flat().sort()).toEqual(
    sandbox
      .studies()
      .map((study) => study.id)
      .sort(),
  );
  expect(taken.filter((studies) => studies.length > 0).length).toBeGreaterThan(1);
}

describe('examples/github-actions-sharded.yml', () => {
  it('is a matrix workflow whose shards together take every study once', async () => {
    const workflow = await example<Workflow>('github-actions-sharded.yml');
    const job = workflow.jobs.export;
    const shards: number[] = job.strategy.matrix.shard;
    expect(shards).toEqual(shards.map((_, i) => i + 1));
    const step = job.steps.find((s) => /study-export run/.test(s.run ?? ''));
    expect(step).toBeDefined();
    const taken: string[][] = [];
    for (const shard of shards) {
      const expressions: Record<string, string> = {
        'matrix.shard': String(shard),
        'strategy.job-total': String(shards.length),
        'vars.STUDY_EXPORT_BUCKET': 'test-bucket',
        'vars.STUDY_API_BASE_URL': sandbox.base_url,
        'secrets.STUDY_API_KEY': sandbox.api_key,
      };
      const env: Record<string, string> = {};
      for (const [name, value] of Object.entries(step?.env ?? {})) {
        env[name] = githubExpand(String(value), expressions);
      }
      expect(env.STUDY_EXPORT_SHARD).toBe(`${shard}/${shards.length}`);
      const words = shellWords(step?.run?.trim() ?? '', env);
      expect(words.slice(0, 2)).toEqual(['npx', 'study-export']);
      const result = await runCli([...words.slice(2), '--dry-run'], { env: { ...env, ...sandboxEnv() } });
      // Nothing but the line saying what starts.
      expect(result.stderr).toMatch(
        /^dry run of [\w-]+: listing the studies at http:\/\/127\.0\.0\.1:\d+\n\n$/,
      );
      expect(result.code).toBe(0);
      expect(result.stdout).toContain(`shard:    ${shard} of ${shards.length}`);
      expect(result.stdout).toMatch(/^out: +s3:.*test-bucket\/study-export/m);
      taken.push(plannedStudies(result.stdout));
    }
    expectEveryStudyOnce(taken);
  });
});

describe('examples/kubernetes-indexed-job.yaml', () => {
  it('is an Indexed Job whose pods (JOB_COMPLETION_INDEX 0..N-1) together take every study once', async () => {
    const cronJob = await example<IndexedCronJob>('kubernetes-indexed-job.yaml');
    const job = cronJob.spec.jobTemplate.spec;
    expect(job.completionMode).toBe('Indexed');
    const container = job.template.spec.containers[0]!;
    expect(container.command).toEqual(['node', 'bin/study-export.js']);
    const env = Object.fromEntries(container.env.map((item) => [item.name, item.value ?? '']));
    expect(Number(env.STUDY_EXPORT_SHARD_COUNT)).toBe(job.completions);
    const taken: string[][] = [];
    for (let index = 0; index < job.completions; index++) {
      // --dry-run: the manifest's bucket is not the test's to write.
      const result = await runCli([...container.args, '--dry-run'], {
        env: { ...env, JOB_COMPLETION_INDEX: String(index), ...sandboxEnv() },
      });
      // Nothing but the line saying what starts.
      expect(result.stderr).toMatch(
        /^dry run of [\w-]+: listing the studies at http:\/\/127\.0\.0\.1:\d+\n\n$/,
      );
      expect(result.code).toBe(0);
      taken.push(plannedStudies(result.stdout));
    }
    expectEveryStudyOnce(taken);
  });
});
