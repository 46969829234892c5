/**
 * What goes wrong with object storage, against real servers on loopback: refused
 * credentials, a missing bucket, an endpoint nobody listens on, a server that answers 503,
 * a failure while the run commits, and a run killed in the middle of a multipart upload.
 * Each gives a clear error with its exit code and leaves nothing that looks like a run.
 */
import { readdir, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, RunError } from '../../src/errors.ts';
import { verifyRun } from '../../src/load/verify.ts';
import type { Sandbox } from '../../src/sandbox/index.ts';
import { startSandbox } from '../../src/sandbox/index.ts';
import { runCli } from '../helpers/cli.ts';
import { currentKeys } from '../helpers/current.ts';
import { EnvironmentPatch, withTempDir } from '../helpers/environment.ts';
import { type Exchange, startProxy } from '../helpers/proxy.ts';
import { readHyparquet } from '../helpers/readers.ts';
import { KEY_ENV, runAgainst, sandboxConfig, spawnRun } from '../helpers/run.ts';
import { downloadObjects, S3_CREDENTIALS, type S3Server, startS3 } from '../helpers/s3.ts';

let sandbox: Sandbox;
let s3: S3Server;
const environment = new EnvironmentPatch();
const setEnv = (values: Record<string, string | undefined>) => environment.set(values);

beforeAll(async () => {
  // Media large enough that media.zip is uploaded in several 5 MiB parts.
  sandbox = await startSandbox({ seed: 31, studies: 3, responses: 10, mediaScale: 2000 });
  s3 = await startS3(['exports']);
  setEnv(S3_CREDENTIALS);
});
afterAll(async () => {
  environment.restore();
  await s3?.close();
  await sandbox?.close();
});

const configFor = (dir: string, endpoint: string, media = false) =>
  sandboxConfig(sandbox, dir, { output: { s3: { endpoint } }, media: { enabled: media } });

/** What S3 answers when it is busy. */
function busy(answer: Exchange['answer']): void {
  answer(503, '<Error><Code>ServiceUnavailable</Code><Message>busy</Message></Error>', {
    'content-type': 'application/xml',
  });
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe('storage that cannot be used', () => {
  it('refused credentials: exit 2, names the problem, never the secret, writes nothing', async () => {
    setEnv({ AWS_ACCESS_KEY_ID: 'WRONGKEYID', AWS_SECRET_ACCESS_KEY: 'wrong-secret-value-123' });
    try {
      const error = await runAgainst(sandbox, configFor('s3://exports/creds', s3.endpoint)).catch((e) => e);
      expect(error).toBeInstanceOf(ConfigError);
      expect(error.exitCode).toBe(2);
      expect(error.message).toMatch(
        /^s3:\/\/exports\/creds\/test\/.*: the storage refused the credentials \(InvalidAccessKeyId\)/,
      );
      expect(JSON.stringify({ message: error.message, context: error.context })).not.toContain(
        'wrong-secret-value-123',
      );
    } finally {
      setEnv(S3_CREDENTIALS);
    }
    expect(await s3.keys('exports', 'creds/')).toEqual([]);
  });

  it('a missing bucket: exit 2, naming the bucket', async () => {
    const error = await runAgainst(sandbox, configFor('s3://no-such-bucket/x', s3.endpoint)).catch((e) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect(error.exitCode).toBe(2);
    expect(error.message).toBe(
      's3://no-such-bucket: the bucket does not exist (check output.dir and the endpoint)',
    );
  });

  it('an endpoint nobody listens on: exit 1, saying the storage cannot be reached', async () => {
    const closed = createServer();
    const endpoint = await listen(closed);
    await new Promise((resolve) => closed.close(resolve));
    const error = await runAgainst(sandbox, configFor('s3://exports/down', endpoint)).catch((e) => e);
    expect(error).toBeInstanceOf(RunError);
    expect(error.exitCode).toBe(1);
    expect(error.message).toMatch(/cannot reach the storage \(ECONNREFUSED\); check output\.s3\.endpoint/);
  });

  it('a server that answers 503: exit 1 after retries, naming the status', async () => {
    let requests = 0;
    const unavailable = createServer((_req, res) => {
      requests++;
      res.writeHead(503, { 'content-type': 'application/xml' });
      res.end('<Error><Code>ServiceUnavailable</Code><Message>busy</Message></Error>');
    });
    const endpoint = await listen(unavailable);
    try {
      const error = await runAgainst(sandbox, configFor('s3://exports/busy', endpoint)).catch((e) => e);
      expect(error).toBeInstanceOf(RunError);
      expect(error.exitCode).toBe(1);
      expect(error.message).toMatch(
        /the storage answered 503 \(ServiceUnavailable\) to a (read|list), after retries/,
      );
      expect(requests).toBe(3);
    } finally {
      await new Promise((resolve) => unavailable.close(resolve));
    }
  });
});

/** Passes every request to s3rver but answers 503 to writes of `failing` keys. */
async function failingProxy(failing: RegExp): Promise<{ endpoint: string; close(): Promise<void> }> {
  const proxy = await startProxy(s3.endpoint, ({ incoming, forward, answer }) => {
    if (incoming.method === 'PUT' && failing.test(incoming.url ?? '')) return busy(answer);
    forward({ keepHost: true });
  });
  return { endpoint: proxy.url, close: proxy.close };
}

describe('a run that fails or is killed on object storage', () => {
  it('a manifest that cannot be written: exit 1, the run removed, latest and state untouched', async () => {
    const first = await runAgainst(sandbox, configFor('s3://exports/commit', s3.endpoint));
    const before = await s3.keys('exports', 'commit/');
    const latest = await s3.get('exports', 'commit/test/latest');
    const proxy = await failingProxy(/manifest\.json/);
    try {
      sandbox.addResponse(sandbox.studies()[0]!.link_id);
      const error = await runAgainst(sandbox, configFor('s3://exports/commit', proxy.endpoint)).catch(
        (e) => e,
      );
      expect(error).toBeInstanceOf(RunError);
      expect(error.message).toMatch(/manifest\.json: the storage answered 503/);
    } finally {
      await proxy.close();
    }
    // Nothing of the failed run is left: the bucket is as the first run left it.
    expect(await s3.keys('exports', 'commit/')).toEqual(before);
    expect(await s3.get('exports', 'commit/test/latest')).toEqual(latest);
    expect(first.status).toBe('complete');
  });

  it('a latest that cannot be written: exit 1, the run and its current/ parts removed, the bucket as before', async () => {
    const first = await runAgainst(sandbox, configFor('s3://exports/pointer', s3.endpoint));
    const before = await s3.keys('exports', 'pointer/');
    const latest = await s3.get('exports', 'pointer/test/latest');
    const proxy = await failingProxy(/\/test\/latest(\?|$)/);
    try {
      // A full run: every study's new parts go into current/ before latest is written.
      const error = await runAgainst(sandbox, configFor('s3://exports/pointer', proxy.endpoint), {
        full: true,
      }).catch((e) => e);
      expect(error).toBeInstanceOf(RunError);
      expect(error.exitCode).toBe(1);
      expect(error.message).toMatch(/\/test\/latest: the storage answered 503/);
    } finally {
      await proxy.close();
    }
    expect(await s3.keys('exports', 'pointer/')).toEqual(before);
    expect(await s3.get('exports', 'pointer/test/latest')).toEqual(latest);
    expect(first.status).toBe('complete');
  });

  it('a run killed in the middle of a multipart upload leaves no visible run; the rerun loses nothing', async () => {
    await withTempDir(async (dir) => {
      const out = 's3://exports/killed';
      const uploads = join(s3.directory, 'exports', '._S3rver_uploads');
      const partsUploaded = async () => {
        const ids = await readdir(uploads).catch(() => [] as string[]);
        for (const id of ids) {
          const parts = await readdir(join(uploads, id)).catch(() => [] as string[]);
          if (parts.some((name) => /^\d+$/.test(name))) return true;
        }
        return false;
      };
      const { child, exited } = await spawnRun(sandbox, dir, out, {
        media: '{ enabled: true, concurrency: 2 }',
        output: `{ dir: "${out}", s3: { endpoint: "${s3.endpoint}" } }`,
      });
      for (let waited = 0; !(await partsUploaded()); waited += 50) {
        if (waited > 60_000) throw new Error('no part of a multipart upload within a minute');
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      child.kill('SIGKILL');
      expect(await exited).toBe('SIGKILL');

      // Nothing that looks like a run: no manifest, no latest, no state.
      const left = await s3.keys('exports', 'killed/');
      expect(left.filter((key) => key.endsWith('/manifest.json'))).toEqual([]);
      expect(left).not.toContain('killed/test/latest');
      expect(left.filter((key) => key.includes('/state'))).toEqual([]);
      expect(left.some((key) => key.startsWith('killed/test/.staged/runs/'))).toBe(true);

      // The rerun (what a killed run left is removed at once here: no grace period).
      const rerun = await runAgainst(sandbox, configFor(out, s3.endpoint, true), { leftoverGraceMs: 0 });
      expect(rerun.status).toBe('complete');
      const runKey = rerun.runDir!.replace('s3://exports/', '');
      const after = await s3.keys('exports', 'killed/');
      expect(after.filter((key) => key.includes('/runs/') && !key.startsWith(`${runKey}/`))).toEqual([]);
      expect(after.filter((key) => key.includes('.staged'))).toEqual([]);

      const responses = join(dir, 'responses.parquet');
      await writeFile(responses, await s3.get('exports', `${runKey}/responses.parquet`));
      const ids = (await readHyparquet(responses)).map((row) => row.response_id as string);
      const expected = sandbox.studies().flatMap((s) => sandbox.responses(s.link_id).map((r) => r.id));
      expect(ids.sort()).toEqual([...expected].sort());
    });
  });
});

/**
 * Passes every request to s3rver; once a write of `latest` has gone through (the run is
 * committed), answers 503 to every write or delete of the keys `failing` matches.
 */
async function failingAfterCommit(
  failing: RegExp,
): Promise<{ endpoint: string; failed: () => number; close(): Promise<void> }> {
  let committed = false;
  let failed = 0;
  const proxy = await startProxy(s3.endpoint, ({ incoming, forward, answer, pass }) => {
    const url = incoming.url ?? '';
    if (committed && incoming.method !== 'GET' && incoming.method !== 'HEAD' && failing.test(url)) {
      failed++;
      return busy(answer);
    }
    forward({
      keepHost: true,
      onAnswer: (reply) => {
        if (incoming.method === 'PUT' && /\/latest(\?|$)/.test(url) && reply.statusCode === 200)
          committed = true;
        pass(reply);
      },
    });
  });
  return { endpoint: proxy.url, failed: () => failed, close: proxy.close };
}

/** current/ of a bucket copied into `dir`, for DuckDB. */
async function downloadCurrent(prefix: string, dir: string): Promise<string> {
  await downloadObjects(s3, 'exports', `${prefix}/test/current/`, join(dir, 'current'));
  return join(dir, 'current');
}

describe('a store that fails after the commit', () => {
  // Its own service: responses another test adds now are within the watermark's lag, and
  // would be exported again by every next run.
  let sandbox: Sandbox;
  beforeAll(async () => {
    sandbox = await startSandbox({ seed: 31, studies: 3, responses: 10 });
  });
  afterAll(async () => {
    await sandbox.close();
  });

  it.each([
    ['current/', 'updating current/', /\/test\/current\//, 'current'],
    ['state/', 'writing the state', /\/test\/state\//, 'state'],
  ])(
    'writes of %s failing: exit 3, "committed, but", the run kept; the next run completes it',
    async (_what, says, failing, where) => {
      await withTempDir(async (dir) => {
        const prefix = `after-${where}`;
        const out = `s3://exports/${prefix}`;
        const pipeline = join(dir, 'p.yaml');
        const pipelineFile = (endpoint: string) =>
          writeFile(
            pipeline,
            [
              'name: test',
              `source: { base_url: "${sandbox.base_url}", api_key_env: ${KEY_ENV} }`,
              `output: { dir: "${out}", s3: { endpoint: "${endpoint}" } }`,
              'media: { enabled: false }',
            ].join('\n'),
          );
        const env = { [KEY_ENV]: sandbox.api_key, ...S3_CREDENTIALS };
        await pipelineFile(s3.endpoint);
        expect((await runCli(['run', '--config', pipeline], { cwd: dir, env })).code).toBe(0);
        const study = sandbox.studies()[0]!;
        // A full run replaces the study's partitions: the response deleted on the service goes.
        const gone = sandbox.responses(study.link_id)[0]!.id;
        sandbox.deleteResponse(study.link_id, gone);

        const proxy = await failingAfterCommit(failing);
        await pipelineFile(proxy.endpoint);
        const failed = await runCli(['run', '--config', pipeline, '--full'], { cwd: dir, env }).finally(() =>
          proxy.close(),
        );
        expect(proxy.failed()).toBeGreaterThan(0);
        expect(failed.code, failed.stderr).toBe(3);
        const runId = (await s3.get('exports', `${prefix}/test/latest`)).toString('utf8').trim();
        const lines = failed.stderr.split('\n').filter((line) => line.startsWith('study-export:'));
        expect(lines).toEqual([
          expect.stringMatching(
            new RegExp(
              `^study-export: run ${runId} committed, but ${says} failed on ${out}/test/${where}: ${out}/test/${where}/.*the storage answered 503 \\(ServiceUnavailable\\) to a (write|delete), after retries; the next run completes it$`,
            ),
          ),
        ]);
        // latest names a run whose every object is there.
        expect((await verifyRun(`${out}/test/runs/${runId}`, { endpoint: s3.endpoint })).problems).toEqual(
          [],
        );
        expect(await s3.keys('exports', `${prefix}/test/.pending/`)).toEqual([
          `${prefix}/test/.pending/${runId}.json`,
        ]);

        // The next run, with nothing new since, completes it.
        await pipelineFile(s3.endpoint);
        const next = await runCli(['run', '--config', pipeline], { cwd: dir, env });
        expect(next.code, next.stderr).toBe(0);
        expect(next.stdout).toMatch(new RegExp(`^nothing new since run ${runId} `));
        expect(await s3.keys('exports', `${prefix}/test/.pending/`)).toEqual([]);
        const state = JSON.parse(
          (await s3.get('exports', `${prefix}/test/state/${study.id}.json`)).toString('utf8'),
        );
        expect(state.last_run).toBe(runId);
        const { responseIds, repeated } = await currentKeys(await downloadCurrent(prefix, dir));
        const expected = sandbox.studies().flatMap((s) => sandbox.responses(s.link_id).map((r) => r.id));
        expect(responseIds).toEqual([...expected].sort());
        expect(responseIds).not.toContain(gone);
        expect(Object.values(repeated).every((n) => n === 0)).toBe(true);
        const parts = (await s3.keys('exports', `${prefix}/test/current/responses/`)).filter((key) =>
          key.endsWith('.parquet'),
        );
        expect(
          parts.every(
            (key) => key.endsWith(`part-${runId}.parquet`) || !key.includes(`study_id=${study.id}`),
          ),
        ).toBe(true);
      });
    },
  );
});
