/**
 * `npm run bench:erase` (node --import tsx bench/erase.ts [--rounds 3] [--runs 4]
 * [--responses 25] [--scale 500] [--small-responses 50] [--small-scale 40]): erasing one
 * response with recordings from an output of many runs (each a full export, so every run holds
 * it, with media, CSV and Parquet), against `cp -r` of those runs' folders, in the same rounds.
 *
 * Twice: at the media scale of the main benchmark (bench/media-rounds.ts: recordings of about
 * 1 MB, so most of a run's bytes are media.zip, as in a study with audio or video), and at a
 * small scale (recordings of about 80 KB), where the tables' share of the bytes is ten times
 * larger and what erase does per run besides copying shows.
 *
 * Figures: erase_vs_cp = erase's time over cp's for the same runs (the median round; target at
 * most 2), erase_s_per_gb = erase's seconds per GB of the runs it rewrote, cp_s_per_gb beside
 * it; floor_vs_cp and erase_vs_floor against the floor of any erasure that rewrites the runs
 * (bench/copy-floor.ts: every byte read, written and SHA-256'd, a thread per core); `small_media`
 * the same at the small scale. In CPU seconds (every thread's): erase_cpu_s, cp_cpu_s, and
 * hash_cpu_s, the SHA-256 of the runs' bytes alone (bench/copy-floor.ts `hashFloorStep`);
 * least_vs_cp = (hash_cpu_s + cp_cpu_s) / cores / cp's time: the least erase_vs_cp any erasure
 * can have on this machine, its hash and a copy as cheap as cp's spread perfectly over every
 * core. Each round works on a fresh copy of the output (made by that
 * cp); before each timed step dirty pages are written out and what it reads is read once. Writes
 * bench/results/<UTC time>-erase.json and latest-erase.json.
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { LocalStorage } from '../src/storage/local.ts';
import { mediaScale } from './media-rounds.ts';
import { repoRoot, runStep, startSandboxProcess } from './processes.ts';
import { machine, medianBy, option, publishResults, round } from './report.ts';

const exec = promisify(execFile);
const log = (message: string) => process.stderr.write(`[bench:erase] ${message}\n`);

async function bytesUnder(dir: string): Promise<number> {
  let bytes = 0;
  for await (const file of new LocalStorage(dir).list('')) bytes += file.bytes;
  return bytes;
}

/** An output of `runs` full exports of the sandbox into `dir`; one response id it holds. */
async function prepare(dir: string, runs: number, spec: { responses: number; scale: number }) {
  const sandbox = await startSandboxProcess({
    studies: 4,
    responses: spec.responses,
    latencyMs: 0,
    mediaScale: spec.scale,
    seed: 5,
  });
  try {
    const pipeline = join(dir, 'pipeline.yaml');
    await writeFile(
      pipeline,
      `name: bench\nsource: { base_url: "${sandbox.info.base_url}" }\n` +
        `output: { dir: "${join(dir, 'out')}", formats: [csv, parquet] }\nmedia: { enabled: true }\n`,
    );
    for (let n = 0; n < runs; n++) {
      await exec(
        process.execPath,
        [join(repoRoot, 'bin', 'study-export.js'), 'run', '-c', pipeline, '--full'],
        {
          cwd: dir,
          env: { ...process.env, STUDY_API_KEY: sandbox.info.api_key },
          maxBuffer: 1 << 26,
        },
      );
      // Run ids are UTC seconds: the next run starts in another second.
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  } finally {
    await sandbox.stop();
  }
  const output = join(dir, 'out', 'bench');
  // A respondent with recordings, as most are: their entries leave every run's media.zip.
  const archived = await exec('sh', [
    '-c',
    `grep -m1 ',archived,' "$(ls -d "$1"/runs/*/ | head -1)media.csv"`,
    'sh',
    output,
  ]);
  const response = archived.stdout.split(',')[0]?.replace(/"/g, '') ?? '';
  return { output, response, runsBytes: await bytesUnder(join(output, 'runs')) };
}

interface Measured {
  cp_ms: number;
  floor_ms: number;
  erase_ms: number;
  rows: number;
  /** CPU seconds, every thread's: cp's, erase's, and the SHA-256 of the runs' bytes alone. */
  cp_cpu_s: number;
  erase_cpu_s: number;
  hash_cpu_s: number;
}

/** `cp -r` of `from` to `to`: its wall time and its CPU time (the shell's `times` for its child). */
async function timedCp(from: string, to: string): Promise<{ ms: number; cpu_s: number }> {
  const started = performance.now();
  const { stdout } = await exec('sh', ['-c', 'cp -r "$1" "$2" && times', 'sh', from, to]);
  const ms = performance.now() - started;
  // `times` prints the shell's user and system time, then its children's: "0m0.000s 0m0.340s".
  const children = stdout.trim().split('\n').at(-1) ?? '';
  const cpu_s = [...children.matchAll(/(\d+)m([\d.]+)s/g)].reduce(
    (sum, match) => sum + Number(match[1]) * 60 + Number(match[2]),
    0,
  );
  return { ms, cpu_s };
}

/**
 * Before each timed step: dirty pages written out (no step pays for the last one's writes) and
 * what the step reads read once (this machine's kernel reclaims idle page cache, so a step
 * that first touches a folder would read it from the disk where the others read memory).
 */
async function settle(reads: string): Promise<void> {
  await exec('sync');
  await exec('sh', ['-c', 'find "$1" -type f -exec cat {} + > /dev/null', 'sh', reads]);
}

/** Rounds of cp then erase on an output of `runs` full exports at one media scale. */
async function measureAt(
  work: string,
  spec: { runs: number; responses: number; scale: number; rounds: number },
) {
  const dir = join(work, `scale-${spec.scale}`);
  await mkdir(dir);
  log(
    `exporting ${spec.runs} full runs of 4 studies x ${spec.responses} responses, media scale ${spec.scale}...`,
  );
  const prepared = await prepare(dir, spec.runs, spec);
  log(`${prepared.runsBytes} bytes in runs/; erasing ${prepared.response}`);
  const measured: Measured[] = [];
  for (let round = 0; round < spec.rounds; round++) {
    const copy = join(dir, `round-${round}`);
    const floorCopy = join(dir, `floor-${round}`);
    // The baseline: cp of the runs the erasure rewrites (every run holds the response).
    await settle(prepared.output);
    const cp = await timedCp(prepared.output, copy);
    await settle(prepared.output);
    const floor = await runStep<{ ms: number }>('copy-floor', {
      from: join(prepared.output, 'runs'),
      to: floorCopy,
    });
    await rm(floorCopy, { recursive: true, force: true });
    await settle(prepared.output);
    const hash = await runStep<{ cpu_s: number }>('hash-floor', { from: join(prepared.output, 'runs') });
    await settle(copy);
    const erased = await runStep<{ ms: number; cpu_s: number; rows: number }>('erase', {
      output: copy,
      response: prepared.response,
    });
    log(
      `scale ${spec.scale} round ${round + 1}: cp ${Math.round(cp.ms)} ms (CPU ${cp.cpu_s.toFixed(2)} s), copy and hash ${Math.round(floor.ms)} ms, SHA-256 alone CPU ${hash.cpu_s.toFixed(2)} s, erase ${Math.round(erased.ms)} ms (CPU ${erased.cpu_s.toFixed(2)} s; ${erased.rows} rows)`,
    );
    measured.push({
      cp_ms: cp.ms,
      floor_ms: floor.ms,
      erase_ms: erased.ms,
      rows: erased.rows,
      cp_cpu_s: cp.cpu_s,
      erase_cpu_s: erased.cpu_s,
      hash_cpu_s: hash.cpu_s,
    });
    await rm(copy, { recursive: true, force: true });
  }
  await rm(dir, { recursive: true, force: true });
  const median = medianBy(measured, (m) => m.erase_ms / m.cp_ms);
  if (!median) throw new Error('bench:erase: no round');
  const gb = prepared.runsBytes / 1e9;
  return {
    erase_vs_cp: round(median.erase_ms / median.cp_ms, 3),
    erase_s_per_gb: round(median.erase_ms / 1000 / gb, 2),
    cp_s_per_gb: round(median.cp_ms / 1000 / gb, 2),
    floor_vs_cp: round(median.floor_ms / median.cp_ms, 3),
    erase_vs_floor: round(median.erase_ms / median.floor_ms, 3),
    floor_s_per_gb: round(median.floor_ms / 1000 / gb, 2),
    erase_cpu_s: round(median.erase_cpu_s, 2),
    cp_cpu_s: round(median.cp_cpu_s, 2),
    hash_cpu_s: round(median.hash_cpu_s, 2),
    // The least erase_vs_cp any erasure can have here: the runs' SHA-256 and at least cp's copy,
    // spread perfectly over every core, nothing else.
    least_vs_cp: round(
      (median.hash_cpu_s + median.cp_cpu_s) / availableParallelism() / (median.cp_ms / 1000),
      3,
    ),
    media_scale: spec.scale,
    runs: spec.runs,
    runs_bytes: prepared.runsBytes,
    rows_erased: median.rows,
    rounds: measured.map((m) => round(m.erase_ms / m.cp_ms, 3)),
  };
}

async function main(): Promise<void> {
  const rounds = option('rounds', 3);
  const runs = option('runs', 4);
  // 4 runs of 4 studies x 25 responses at the realistic scale hold 1.4 GB: each step's writes
  // stay below the kernel's background write-back threshold (10% of memory), so the disk
  // does not throttle one step more than another.
  const responses = option('responses', 25);
  const scale = option('scale', mediaScale);
  const smallResponses = option('small-responses', 50);
  const smallScale = option('small-scale', 40);
  const work = await mkdtemp(join(tmpdir(), 'study-export-bench-erase-'));
  try {
    const realistic = await measureAt(work, { runs, responses, scale, rounds });
    const small = await measureAt(work, { runs, responses: smallResponses, scale: smallScale, rounds });
    await publishResults({ machine: machine(), ...realistic, small_media: small }, '-erase', log);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

await main();
