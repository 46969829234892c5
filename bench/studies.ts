/**
 * `npm run bench:studies`: the many-studies figures (bench/README.md). The same responses as
 * many small studies and as a few large ones, against the same sandbox settings, measured in
 * one run:
 *
 * - `studies_scale`: wall time of a full run over 1,500 studies × 2 responses over that of
 *   15 studies × 200 (alternating, `--rounds N` pairs, the median pair's ratio);
 * - `studies_floor_scale`: the same ratio for the raw-fetch floor (bench/floor.ts) of each
 *   shape, against the same sandboxes in the same round, with `small_vs_floor` and
 *   `large_vs_floor`, each run over its floor. The small shape makes more requests (each
 *   study's listing page and the empty page that ends it), so at a fixed latency and
 *   concurrency its floor is slower too: the floor ratio is what `studies_scale` could reach
 *   if a run cost no more than its requests;
 * - files per study that the small-studies run leaves in its run folder, current/ and state/;
 * - to s3:// (s3rver on loopback): S3 requests per study of a first run and of a rerun with
 *   nothing changed, counted at the server, by operation.
 *
 * `--small N` and `--s3-studies N` change the small-study count (of the local pair and of the
 * S3 runs); `--s3-only` skips the local pair. s3rver makes its continuation tokens with DES,
 * which Node's OpenSSL 3 offers only with `--openssl-legacy-provider` (the npm script sets it):
 * without it every listing past one page answers 500. The result is written to bench/results/<UTC time>-studies.json and
 * latest-studies.json, and printed as the last stdout line.
 */

import { mkdtemp, readdir, rm } from 'node:fs/promises';
import type { IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { S3_CREDENTIALS, startS3 } from '../test/helpers/s3.ts';
import type { ExportInput, ExportResult } from './export.ts';
import type { FloorInput, FloorResult } from './floor.ts';
import { runStep, startSandboxProcess } from './processes.ts';
import { machine, medianBy, round, writeResults } from './report.ts';

type Measured<T> = T & { maxrss_mb: number };

const latencyMs = 20;
const concurrency = 8;
const perPage = 1000;
const totalResponses = 3000;
const largeStudies = 15;
/** Responses of each small study in the S3 runs. */
const smallResponses = 2;

const log = (message: string) => process.stderr.write(`[bench:studies] ${message}\n`);
const seconds = (ms: number) => round(ms / 1000, 2);

function argNumber(flag: string, fallback: number): number {
  const at = process.argv.indexOf(flag);
  if (at === -1) return fallback;
  const value = Number(process.argv[at + 1]);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${flag}: expected a whole number from 1`);
  return value;
}

/** Regular files under `dir`, every depth; 0 when it does not exist. */
async function countFiles(dir: string): Promise<number> {
  let entries: import('node:fs').Dirent[];
  try {
    entries = await readdir(dir, { withFileTypes: true, recursive: true });
  } catch {
    return 0;
  }
  return entries.filter((entry) => entry.isFile()).length;
}

/** S3 requests by operation, from the request line (what the server was asked). */
function operation(request: IncomingMessage): string {
  const url = new URL(request.url ?? '/', 'http://s3');
  const method = request.method ?? 'GET';
  const path = url.pathname.split('/').filter(Boolean);
  const bucketOnly = path.length <= 1;
  if (method === 'GET' && bucketOnly) return 'list';
  if (method === 'GET') return 'get';
  if (method === 'HEAD') return 'head';
  if (method === 'DELETE') return 'delete';
  if (method === 'POST' && url.searchParams.has('delete')) return 'delete_objects';
  if (method === 'POST' && url.searchParams.has('uploads')) return 'multipart_start';
  if (method === 'POST' && url.searchParams.has('uploadId')) return 'multipart_complete';
  if (method === 'PUT' && url.searchParams.has('partNumber')) return 'multipart_part';
  if (method === 'PUT' && request.headers['x-amz-copy-source']) return 'copy';
  if (method === 'PUT') return 'put';
  return `${method.toLowerCase()}_other`;
}

function perStudy(counts: Record<string, number>, studies: number) {
  const total = Object.values(counts).reduce((sum, n) => sum + n, 0);
  return { total, per_study: round(total / studies, 2), by_operation: counts };
}

async function localPair(work: string, small: number, rounds: number) {
  const smallSandbox = await startSandboxProcess({
    studies: small + 1,
    responses: totalResponses / small,
    latencyMs,
  });
  const largeSandbox = await startSandboxProcess({
    studies: largeStudies + 1,
    responses: totalResponses / largeStudies,
    latencyMs,
  });
  try {
    const pairs: {
      small: Measured<ExportResult>;
      large: Measured<ExportResult>;
      smallFloor: Measured<FloorResult>;
      largeFloor: Measured<FloorResult>;
      ratio: number;
      floorRatio: number;
      out: string;
    }[] = [];
    for (let i = 0; i < rounds; i++) {
      const common = { concurrency, perPage, formats: ['csv', 'parquet'] } as const;
      const largeFloorInput: FloorInput = { sandbox: largeSandbox.info, concurrency, perPage };
      const largeInput: ExportInput = {
        ...common,
        formats: [...common.formats],
        sandbox: largeSandbox.info,
        out: join(work, `large-${i}`),
      };
      // Each shape's floor just before its run, as the e2e rounds do (bench/run.ts): both see
      // the same sandbox and about the same load.
      log(`round ${i + 1}/${rounds}: ${largeStudies} studies × ${totalResponses / largeStudies}, floor`);
      const largeFloor = await runStep<Measured<FloorResult>>('floor', largeFloorInput);
      log(`  floor ${seconds(largeFloor.ms)} s (${largeFloor.requests} requests); full run`);
      const large = await runStep<Measured<ExportResult>>('export', largeInput);
      log(`  ${seconds(large.ms)} s; ${small} studies × ${totalResponses / small}, floor`);
      const smallFloorInput: FloorInput = { sandbox: smallSandbox.info, concurrency, perPage };
      const smallFloor = await runStep<Measured<FloorResult>>('floor', smallFloorInput);
      log(`  floor ${seconds(smallFloor.ms)} s (${smallFloor.requests} requests); full run`);
      const smallInput: ExportInput = {
        ...common,
        formats: [...common.formats],
        sandbox: smallSandbox.info,
        out: join(work, `small-${i}`),
      };
      const smallRun = await runStep<Measured<ExportResult>>('export', smallInput);
      const ratio = round(smallRun.ms / large.ms, 3);
      const floorRatio = round(smallFloor.ms / largeFloor.ms, 3);
      log(`  ${seconds(smallRun.ms)} s: studies_scale ${ratio}, studies_floor_scale ${floorRatio}`);
      pairs.push({ small: smallRun, large, smallFloor, largeFloor, ratio, floorRatio, out: smallInput.out });
    }
    const median = medianBy(pairs, (p) => p.ratio) as (typeof pairs)[number];
    const runDir = median.small.runDir as string;
    // <out>/<pipeline name>/runs/<run id>: current/ and state/ sit beside runs/.
    const pipelineRoot = join(runDir, '..', '..');
    const files = {
      run: await countFiles(runDir),
      current: await countFiles(join(pipelineRoot, 'current')),
      state: await countFiles(join(pipelineRoot, 'state')),
    };
    const studies = median.small.studies;
    // The median round's floors, so that studies_scale is studies_floor_scale × small_vs_floor
    // / large_vs_floor (to rounding): what the floors allow, and what each run adds to them.
    return {
      studies_scale: median.ratio,
      studies_floor_scale: median.floorRatio,
      small_vs_floor: round(median.small.ms / median.smallFloor.ms, 3),
      large_vs_floor: round(median.large.ms / median.largeFloor.ms, 3),
      rounds: pairs.map((p) => p.ratio),
      floor_rounds: pairs.map((p) => p.floorRatio),
      small_s: seconds(median.small.ms),
      large_s: seconds(median.large.ms),
      small_floor_s: seconds(median.smallFloor.ms),
      large_floor_s: seconds(median.largeFloor.ms),
      small_requests: median.small.requests,
      large_requests: median.large.requests,
      small_floor_requests: median.smallFloor.requests,
      large_floor_requests: median.largeFloor.requests,
      small_rss_mb: median.small.maxrss_mb,
      large_rss_mb: median.large.maxrss_mb,
      small_studies: studies,
      responses: median.small.tables.responses ?? 0,
      large_responses: median.large.tables.responses ?? 0,
      files_per_study: {
        run: round(files.run / studies, 3),
        current: round(files.current / studies, 3),
        state: round(files.state / studies, 3),
      },
      files,
    };
  } finally {
    await smallSandbox.stop();
    await largeSandbox.stop();
  }
}

async function s3Runs(studies: number) {
  const s3 = await startS3(['bench']);
  Object.assign(process.env, S3_CREDENTIALS);
  const counts: Record<string, number> = {};
  const sandbox = await startSandboxProcess({ studies: studies + 1, responses: smallResponses, latencyMs });
  try {
    s3.onRequest((request) => {
      const op = operation(request);
      counts[op] = (counts[op] ?? 0) + 1;
    });
    const input: ExportInput = {
      sandbox: sandbox.info,
      out: 's3://bench/studies',
      concurrency,
      perPage,
      formats: ['csv', 'parquet'],
      s3Endpoint: s3.endpoint,
    };
    log(`s3://: first run of ${studies} studies × ${smallResponses}`);
    const first = await runStep<Measured<ExportResult>>('export', input);
    if (first.status !== 'complete') throw new Error(`the first run to s3:// ended ${first.status}`);
    const firstCounts = { ...counts };
    for (const key of Object.keys(counts)) delete counts[key];
    log(`  ${seconds(first.ms)} s, ${JSON.stringify(firstCounts)}; rerun with nothing changed`);
    const rerun = await runStep<Measured<ExportResult>>('export', input);
    const rerunCounts = { ...counts };
    log(`  ${seconds(rerun.ms)} s (${rerun.status}), ${JSON.stringify(rerunCounts)}`);
    return {
      studies: first.studies,
      first_s: seconds(first.ms),
      noop_s: seconds(rerun.ms),
      noop_wrote_run: rerun.runDir !== null,
      first: perStudy(firstCounts, first.studies),
      noop: perStudy(rerunCounts, first.studies),
    };
  } finally {
    await sandbox.stop();
    await s3.close();
  }
}

async function main(): Promise<void> {
  const small = argNumber('--small', 1500);
  const rounds = argNumber('--rounds', 1);
  const s3Studies = argNumber('--s3-studies', small);
  const started = Date.now();
  const load = (await import('node:os')).loadavg().map((n) => round(n, 1));
  const work = await mkdtemp(join(tmpdir(), 'study-export-bench-studies-'));
  try {
    const local = process.argv.includes('--s3-only') ? null : await localPair(work, small, rounds);
    // s3rver answers 500 to some requests under load: the local figures are kept all the same.
    const s3 = await s3Runs(s3Studies).catch((error: unknown) => ({ error: String(error) }));
    const s3Figures = 'error' in s3 ? null : { first: s3.first.per_study, noop: s3.noop.per_study };
    const result = {
      studies_scale: local?.studies_scale ?? null,
      studies_floor_scale: local?.studies_floor_scale ?? null,
      small_vs_floor: local?.small_vs_floor ?? null,
      large_vs_floor: local?.large_vs_floor ?? null,
      files_per_study: local?.files_per_study ?? null,
      s3_requests_per_study: s3Figures,
      targets: {
        studies_scale: '<= 1.5',
        's3_requests_per_study.noop': '<= 1.2, writing nothing',
        'files_per_study.current': '<= 2',
      },
      settings: {
        latency_ms: latencyMs,
        concurrency,
        per_page: perPage,
        total_responses: totalResponses,
        rounds,
      },
      local,
      s3,
      load_before: load,
      load_after: (await import('node:os')).loadavg().map((n) => round(n, 1)),
      machine: machine(),
      total_s: seconds(Date.now() - started),
    };
    const [file] = await writeResults(result, '-studies');
    log(`results written to ${file}`);
    process.stdout.write(`${JSON.stringify(result)}\n`);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

await main();
