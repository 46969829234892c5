/**
 * Where a bag's contents came from: the runs that exported the study (ids, times, status,
 * the tool's version, the service's base URL as the manifest records it: never a key, never
 * a user:password), which run's media.zip each recording came out of (recordings.csv), and the
 * study's raw payloads from each of those runs, as received, for audit: the lines of each
 * run's raw/<operation>.jsonl.gz whose request names the study, gzipped again (the listing of
 * every study, list_surveys, names others and stays out).
 */
import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import { createInterface } from 'node:readline';
import { createGunzip, createGzip } from 'node:zlib';
import { MEDIA_ZIP } from '../output/layout.ts';
import type { RunReader } from '../reader/index.ts';
import { redact } from '../redact.ts';
import type { Row } from '../tables/index.ts';

export const PROVENANCE_DIR = 'provenance';

/** runs.json: one entry per run that exported the study. */
export function runsJson(runs: readonly RunReader[], study: Row<'studies'>): string {
  const entries = runs.map((run) => {
    const { manifest } = run;
    const outcome = manifest.studies.find((s) => s.study_id === study.study_id);
    return {
      run_id: run.id,
      started_at: manifest.started_at,
      finished_at: manifest.finished_at,
      status: manifest.status,
      tool: manifest.tool,
      pipeline: manifest.pipeline,
      service: redact(manifest.config?.source?.base_url ?? ''),
      study: outcome ?? null,
      media_zip: run.file(MEDIA_ZIP) ?? null,
    };
  });
  return `${JSON.stringify({ study_id: study.study_id, runs: entries }, null, 2)}\n`;
}

/** The newest time any of the runs finished: the bag's date, the same whenever it is made. */
export function newestFinish(runs: readonly RunReader[]): Date {
  const times = runs.map((run) => Date.parse(run.manifest.finished_at)).filter((t) => Number.isFinite(t));
  return new Date(times.length > 0 ? Math.max(...times) : 0);
}

/**
 * Writes the study's lines of one raw file into `target` (a local scratch file), gzipped;
 * returns how many there were (none: no file is worth keeping).
 */
export async function filterRaw(
  run: RunReader,
  path: string,
  keep: (record: { study_id?: unknown; link_id?: unknown }) => boolean,
  target: string,
): Promise<number> {
  await mkdir(dirname(target), { recursive: true });
  const gzip = createGzip({ level: 6 });
  const out = createWriteStream(target);
  const done = once(out, 'close');
  gzip.pipe(out);
  let kept = 0;
  const lines = createInterface({ input: (await run.open(path)).pipe(createGunzip()), crlfDelay: Infinity });
  for await (const line of lines) {
    if (line === '') continue;
    let record: { study_id?: unknown; link_id?: unknown };
    try {
      record = JSON.parse(line) as typeof record;
    } catch {
      continue;
    }
    if (!keep(record)) continue;
    kept++;
    if (!gzip.write(`${line}\n`)) await once(gzip, 'drain');
  }
  gzip.end();
  await done;
  return kept;
}
