/**
 * A rerun with nothing new, to s3://, of an output of many small studies: the requests it
 * makes, counted at a real S3-protocol server on loopback (s3rver). It only reads: the state it
 * needs (one object a study), latest, the service it belongs to, its shard's records, and
 * whether a killed run left a lease or a staged run. It writes and removes nothing (no lease,
 * no staged run) and reads nothing of current/.
 */
import type { IncomingMessage } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentReporter } from '../../src/pipeline/progress.ts';
import { runPipeline } from '../../src/pipeline/run.ts';
import type { Sandbox } from '../../src/sandbox/index.ts';
import { KEY_ENV, sandboxConfig } from '../helpers/run.ts';
import { type S3Server, startSandboxAndS3 } from '../helpers/s3.ts';

let sandbox: Sandbox;
let s3: S3Server;
let stop: (() => Promise<void>) | undefined;

beforeAll(async () => {
  ({ sandbox, s3, stop } = await startSandboxAndS3({ seed: 53, studies: 61, responses: 1 }));
});
afterAll(() => stop?.());

interface Request {
  method: string;
  key: string;
  list: boolean;
}

function described(request: IncomingMessage): Request {
  const url = new URL(request.url ?? '/', 'http://s3');
  const [, , ...key] = url.pathname.split('/').filter((part, index) => index < 2 || part !== '');
  const list = request.method === 'GET' && key.length === 0;
  const prefix = url.searchParams.get('prefix') ?? '';
  return { method: request.method ?? '', key: list ? prefix : decodeURIComponent(key.join('/')), list };
}

describe('a rerun with nothing new to s3://, many studies', () => {
  it('makes one request a study (its state) and a fixed few for the run, all of them reads', async () => {
    const config = sandboxConfig(sandbox, 's3://exports/many', { output: { s3: { endpoint: s3.endpoint } } });
    // The run's files are read back by other tests (s3-run.test.ts); here only requests count.
    const run = () =>
      runPipeline({
        config,
        configFile: 'test pipeline',
        reporter: silentReporter,
        env: { [KEY_ENV]: sandbox.api_key },
      });
    const first = await run();
    expect(first.status).toBe('complete');
    const studies = (await s3.keys('exports', 'many/test/state/')).length;
    expect(studies).toBe(60);

    const requests: Request[] = [];
    s3.onRequest((request) => requests.push(described(request)));
    const rerun = await run();
    expect(rerun.status).toBe('unchanged');

    const all = JSON.stringify(requests.map((r) => [r.method, r.key]));
    // No PUT (a copy is one), POST (multipart, a batch delete) or DELETE: only GETs.
    expect(requests.filter((r) => r.method !== 'GET' && r.method !== 'HEAD')).toEqual([]);
    const currentReads = requests.filter((r) => r.key.startsWith('many/test/current'));
    const stateReads = requests.filter((r) => !r.list && r.key.startsWith('many/test/state/'));
    // current/ is listed once (a format added to the pipeline since would be missing from it:
    // pipeline/added-formats.ts), and none of its objects is read.
    expect(currentReads).toEqual([{ method: 'GET', key: 'many/test/current/', list: true }]);
    expect(stateReads).toHaveLength(studies);
    // Beyond the state, nine reads for the run: the listing of state/, a state.json of before,
    // latest, source.json and the listing of the shards' sources/, the listing of .pending/,
    // what a killed run may have left (the lease and the listing of .staged/), and that of current/.
    expect(requests.length - stateReads.length, all).toBeLessThanOrEqual(9);
  }, 300_000);
});
