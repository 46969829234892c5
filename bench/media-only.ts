/**
 * The media figures alone, as `npm run bench` measures them (bench/media-rounds.ts):
 * `node --import tsx bench/media-only.ts [--responses 40] [--rounds 3] [--cpu-prof DIR]`.
 * Each round runs our media step in its own process and then curl on the same URLs; each
 * round's figures go to stderr, the medians and every round to the last stdout line (JSON).
 * With --cpu-prof the media child writes a V8 CPU profile into DIR.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { curlWithParallel } from './curl.ts';
import { measureMediaRounds } from './media-rounds.ts';

const log = (message: string) => process.stderr.write(`[media-bench] ${message}\n`);

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      responses: { type: 'string', default: '40' },
      rounds: { type: 'string', default: '3' },
      'cpu-prof': { type: 'string' },
    },
  });
  if (!curlWithParallel()) throw new Error('media bench: curl 7.66+ with --parallel is needed');
  const profDir = values['cpu-prof'];
  const work = await mkdtemp(join(tmpdir(), 'study-export-media-bench-'));
  try {
    const measured = await measureMediaRounds({
      work,
      responses: Number(values.responses),
      rounds: Number(values.rounds),
      nodeArgs: profDir ? ['--cpu-prof', '--cpu-prof-dir', profDir] : [],
      log,
    });
    const { media_vs_curl, media_vs_same_work, rounds } = measured;
    const summary = {
      media_vs_curl,
      media_vs_same_work,
      ratios: rounds.map((r) => r.media_vs_curl),
      same_work_ratios: rounds.map((r) => r.media_vs_same_work),
      rounds,
      loadavg: loadavg(),
    };
    process.stdout.write(`${JSON.stringify(summary)}\n`);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

await main();
