/**
 * examples/: the GitHub Actions matrix workflow and the Kubernetes Indexed Job parse as
 * YAML, and the command line each one runs, with the environment it sets, is accepted by
 * the CLI: the N shards take every study exactly once, each shard's verify step checks the
 * run its pointer names, and the summary finds every shard's pointer. The Kubernetes pods
 * run the Dockerfile's image as it is (its entrypoint, its working folder, the pipeline file
 * from the ConfigMap). After the shards, each example's `study-export describe` writes
 * current/datapackage.json over every shard's buckets, naming only objects that are there.
 * Buckets are served by s3rver on loopback.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { repoRoot, runCli } from '../helpers/cli.ts';
import { withTempDir } from '../helpers/environment.ts';
import { commandLine, githubExpand, shellWords, type WorkflowStep } from '../helpers/examples.ts';
import { S3_CREDENTIALS, type S3Server, startS3 } from '../helpers/s3.ts';

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

interface Workflow {
  jobs: {
    export: { strategy: { matrix: { shard: number[] } }; steps: WorkflowStep[] };
    summary: { needs: string; if: string; steps: WorkflowStep[] };
  };
}
interface Container {
  image: string;
  command?: string[];
  args: string[];
  env: { name: string; value?: string }[];
  securityContext: { readOnlyRootFilesystem: boolean };
  volumeMounts: { name: string; mountPath: string }[];
}
interface IndexedCronJob {
  kind: 'CronJob';
  spec: {
    jobTemplate: {
      spec: {
        completionMode: string;
        completions: number;
        template: {
          spec: {
            securityContext: { runAsNonRoot: boolean };
            containers: Container[];
            volumes: { name: string; configMap?: { name: string }; emptyDir?: object }[];
          };
        };
      };
    };
  };
}
interface ConfigMap {
  kind: 'ConfigMap';
  metadata: { name: string };
  data: Record<string, string>;
}

const example = async <T>(name: string) =>
  parse(await readFile(path.join(repoRoot, 'examples', name), 'utf8')) as T;

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

/**
 * current/datapackage.json of `root` in the bucket: it covers every shard's pointer, and every
 * file it names is in the bucket.
 */
async function expectDescribed(bucket: string, root: string, shards: number): Promise<void> {
  const descriptor = JSON.parse((await s3.get(bucket, `${root}current/datapackage.json`)).toString()) as {
    resources: { path: string | string[] }[];
    covers: { buckets: string; runs: Record<string, string> };
  };
  expect(descriptor.covers.buckets).toBe('all');
  expect(Object.keys(descriptor.covers.runs).sort()).toEqual(
    Array.from({ length: shards }, (_, i) => `latest-shard-${i + 1}-of-${shards}`),
  );
  const keys = new Set(await s3.keys(bucket, `${root}current/`));
  const named = descriptor.resources.flatMap((resource) => [resource.path].flat());
  expect(named.filter((file) => file.startsWith('responses/')).length).toBeGreaterThan(1);
  expect(named.filter((file) => !keys.has(`${root}current/${file}`))).toEqual([]);
}

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
  it('is a matrix workflow whose shards together take every study once, each verified, and gathered in one summary', async () => {
    const workflow = await example<Workflow>('github-actions-sharded.yml');
    const job = workflow.jobs.export;
    const shards: number[] = job.strategy.matrix.shard;
    expect(shards).toEqual(shards.map((_, i) => i + 1));
    expect(job.steps.some((step) => /npm (ci|install)\b(?! --global)/.test(step.run ?? ''))).toBe(false);
    expect(job.steps.find((step) => step.name === 'Install study-export')?.run).toContain(
      'npm install --global',
    );
    const step = job.steps.find((s) => /study-export run/.test(s.run ?? ''))!;
    const verify = job.steps.find((s) => /study-export verify/.test(s.run ?? ''))!;
    const taken: string[][] = [];
    const verified: string[] = [];
    for (const shard of shards) {
      const expressions: Record<string, string> = {
        'matrix.shard': String(shard),
        'strategy.job-total': String(shards.length),
        'vars.STUDY_EXPORT_BUCKET': 'test-bucket',
        'vars.STUDY_API_BASE_URL': sandbox.base_url,
        'secrets.STUDY_API_KEY': sandbox.api_key,
      };
      const env: Record<string, string> = {};
      for (const [name, value] of Object.entries(step.env ?? {})) {
        env[name] = githubExpand(String(value), expressions);
      }
      expect(env.STUDY_EXPORT_SHARD).toBe(`${shard}/${shards.length}`);
      const words = shellWords(commandLine(step.run ?? '', 'run'), env);
      expect(words[0]).toBe('study-export');
      const planned = await runCli([...words.slice(1), '--dry-run'], { env: { ...env, ...sandboxEnv() } });
      // Nothing but the line saying what starts.
      expect(planned.stderr).toMatch(
        /^dry run of [\w-]+: listing the studies at http:\/\/127\.0\.0\.1:\d+\n\n$/,
      );
      expect(planned.code).toBe(0);
      expect(planned.stdout).toContain(`shard:    ${shard} of ${shards.length}`);
      expect(planned.stdout).toMatch(/^out: +s3:.*test-bucket\/study-export/m);
      taken.push(plannedStudies(planned.stdout));
      const exported = await runCli(words.slice(1), { env: { ...env, ...sandboxEnv() } });
      expect(exported.code).toBe(0);

      // The verify step: the pointer it reads (`aws s3 cp` is read here with the SDK), then verify.
      const verifyEnv: Record<string, string> = {};
      for (const [name, value] of Object.entries(verify.env ?? {})) {
        verifyEnv[name] = githubExpand(String(value), expressions);
      }
      const lines = verify.run!.split('\n').map((line) => line.trim());
      const pointerLine = lines.find((line) => line.startsWith('pointer='))!;
      const pointer = shellWords(pointerLine.slice('pointer='.length), verifyEnv)[0]!;
      expect(pointer).toBe(
        `s3://test-bucket/study-export/nightly-incremental/latest-shard-${shard}-of-${shards.length}`,
      );
      const runId = (await s3.get('test-bucket', pointer.slice('s3://test-bucket/'.length)))
        .toString()
        .trim();
      const verifyLine = lines.find((line) => line.startsWith('study-export verify'))!;
      const verifyWords = shellWords(verifyLine, { ...verifyEnv, run_id: runId });
      const checked = await runCli(verifyWords.slice(1), { env: { ...verifyEnv, ...sandboxEnv() } });
      expect(checked.stderr + checked.stdout).toMatch(/: ok \(checked \d+ files, \d+ tables/);
      expect(checked.code).toBe(0);
      verified.push(runId);
    }
    expectEveryStudyOnce(taken);

    // The summary job runs after every shard and lists exactly the shards' pointers, whose runs
    // have the manifest fields it prints.
    const summary = workflow.jobs.summary;
    expect(summary.needs).toBe('export');
    expect(summary.if).toContain('!cancelled()');
    const gather = summary.steps.find((s) => /latest-shard-/.test(s.run ?? ''))!;
    expect(gather.run).toContain('$GITHUB_STEP_SUMMARY');
    const root = 'study-export/nightly-incremental/';
    const pointers = (await s3.keys('test-bucket', root))
      .map((key) => key.slice(root.length))
      .filter((name) => /^latest-shard-/.test(name));
    expect(pointers).toEqual(shards.map((shard) => `latest-shard-${shard}-of-${shards.length}`));
    for (const runId of verified) {
      const manifest = JSON.parse(
        (await s3.get('test-bucket', `${root}runs/${runId}/manifest.json`)).toString(),
      );
      expect(manifest.status).toBe('complete');
      expect(Array.isArray(manifest.studies)).toBe(true);
    }

    // Before the gathering, the summary job describes all of current/.
    const describeStep = summary.steps.find((s) => /study-export describe/.test(s.run ?? ''))!;
    const installStep = summary.steps.findIndex((s) => s.name === 'Install study-export');
    expect(installStep).toBeGreaterThanOrEqual(0);
    expect(summary.steps.indexOf(describeStep)).toBeLessThan(summary.steps.indexOf(gather));
    const describeEnv: Record<string, string> = {};
    for (const [name, value] of Object.entries(describeStep.env ?? {})) {
      describeEnv[name] = githubExpand(String(value), { 'vars.STUDY_EXPORT_BUCKET': 'test-bucket' });
    }
    const words = shellWords(describeStep.run?.trim() ?? '', describeEnv);
    const described = await runCli(words.slice(1), { env: { ...describeEnv, ...sandboxEnv() } });
    expect(described, described.stderr).toMatchObject({ code: 0 });
    await expectDescribed('test-bucket', root, shards.length);
  });
});

describe('examples/kubernetes-indexed-job.yaml', () => {
  it("runs the Dockerfile's image as it is, and its pods (JOB_COMPLETION_INDEX 0..N-1) together take every study once", async () => {
    const documents = parseAllDocuments(
      await readFile(path.join(repoRoot, 'examples', 'kubernetes-indexed-job.yaml'), 'utf8'),
    ).map((document) => document.toJS()) as (ConfigMap | IndexedCronJob)[];
    const configMap = documents.find((document): document is ConfigMap => document.kind === 'ConfigMap')!;
    const cronJob = documents.find((document): document is IndexedCronJob => document.kind === 'CronJob')!;
    const job = cronJob.spec.jobTemplate.spec;
    expect(job.completionMode).toBe('Indexed');
    const pod = job.template.spec;
    const container = pod.containers[0]!;
    // The image's entrypoint, not a command of its own (which would skip the heap settings).
    expect(container.command).toBeUndefined();
    const dockerfile = await readFile(path.join(repoRoot, 'Dockerfile'), 'utf8');
    const workdir = /^WORKDIR (\S+)$/m.exec(dockerfile.slice(dockerfile.lastIndexOf('\nFROM ')))?.[1];
    expect(pod.securityContext.runAsNonRoot).toBe(true);
    expect(container.securityContext.readOnlyRootFilesystem).toBe(true);
    const env = Object.fromEntries(container.env.map((item) => [item.name, item.value ?? '']));
    // Writable: only the scratch volume, where TMPDIR points.
    const scratch = container.volumeMounts.find((mount) => mount.mountPath === env.TMPDIR)!;
    expect(pod.volumes.find((volume) => volume.name === scratch.name)?.emptyDir).toBeDefined();
    const pipelines = container.volumeMounts.find((mount) => mount.mountPath === `${workdir}/pipelines`)!;
    expect(pod.volumes.find((volume) => volume.name === pipelines.name)?.configMap?.name).toBe(
      configMap.metadata.name,
    );
    expect(Number(env.STUDY_EXPORT_SHARD_COUNT)).toBe(job.completions);
    await withTempDir(async (cwd) => {
      // The working folder as the pod has it: the ConfigMap's files in pipelines/.
      await mkdir(path.join(cwd, 'pipelines'));
      for (const [name, text] of Object.entries(configMap.data)) {
        await writeFile(path.join(cwd, 'pipelines', name), text);
      }
      const taken: string[][] = [];
      for (let index = 0; index < job.completions; index++) {
        // --dry-run first: what each pod would take.
        const result = await runCli([...container.args, '--dry-run'], {
          cwd,
          env: { ...env, JOB_COMPLETION_INDEX: String(index), ...sandboxEnv() },
        });
        // Nothing but the line saying what starts.
        expect(result.stderr).toMatch(
          /^dry run of [\w-]+: listing the studies at http:\/\/127\.0\.0\.1:\d+\n\n$/,
        );
        expect(result.code).toBe(0);
        expect(result.stdout).toMatch(/^out: +s3:.*your-bucket\/study-export/m);
        taken.push(plannedStudies(result.stdout));
      }
      expectEveryStudyOnce(taken);

      // The pods for real, then the describe CronJob's pod, in the same image and folder.
      for (let index = 0; index < job.completions; index++) {
        const result = await runCli(container.args, {
          cwd,
          env: { ...env, JOB_COMPLETION_INDEX: String(index), ...sandboxEnv() },
        });
        expect(result, result.stderr).toMatchObject({ code: 0 });
      }
      const describer = documents.find(
        (document): document is IndexedCronJob => document.kind === 'CronJob' && document !== cronJob,
      )!;
      const describePod = describer.spec.jobTemplate.spec.template.spec;
      const describeContainer = describePod.containers[0]!;
      expect(describeContainer.image).toBe(container.image);
      expect(describeContainer.command).toBeUndefined();
      expect(describeContainer.args.slice(0, 1)).toEqual(['describe']);
      expect(describePod.volumes.find((volume) => volume.configMap)?.configMap?.name).toBe(
        configMap.metadata.name,
      );
      const describeEnv = Object.fromEntries(
        describeContainer.env.map((item) => [item.name, item.value ?? '']),
      );
      const described = await runCli(describeContainer.args, {
        cwd,
        env: { ...describeEnv, ...sandboxEnv() },
      });
      expect(described, described.stderr).toMatchObject({ code: 0 });
      await expectDescribed('your-bucket', 'study-export/nightly-incremental/', job.completions);
    });
  });
});
