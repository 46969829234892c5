/** A full run of the pipeline against a sandbox, as `study-export run` would do it. */
import type { CountersSnapshot } from '../src/api/counters.ts';
import { parsePipelineConfig } from '../src/config/load.ts';
import type { Format } from '../src/config/schema.ts';
import type { Manifest } from '../src/output/manifest.ts';
import { silentReporter } from '../src/pipeline/progress.ts';
import { runPipeline } from '../src/pipeline/run.ts';
import { openStorage } from '../src/storage/index.ts';
import type { SandboxInfo } from './processes.ts';

export interface ExportInput {
  sandbox: SandboxInfo;
  out: string;
  concurrency: number;
  perPage: number;
  formats: Format[];
  /** For an s3:// `out`: the S3-compatible server's URL. */
  s3Endpoint?: string;
}

export interface ExportResult {
  ms: number;
  status: string;
  /** null: the run found nothing new and wrote no run. */
  runDir: string | null;
  /** API requests the run made, every operation and outcome (from the manifest, or the result of a run with nothing new). */
  requests: number;
  studies: number;
  tables: Record<string, number>;
  timings_ms: Record<string, number>;
}

const keyEnv = 'BENCH_KEY';

export async function exportOnce(input: ExportInput): Promise<ExportResult> {
  const config = parsePipelineConfig(
    {
      name: 'bench',
      source: {
        base_url: input.sandbox.base_url,
        api_key_env: keyEnv,
        per_page: input.perPage,
        concurrency: input.concurrency,
      },
      output: {
        dir: input.out,
        formats: input.formats,
        ...(input.s3Endpoint ? { s3: { endpoint: input.s3Endpoint } } : {}),
      },
      media: { enabled: false },
    },
    'bench pipeline',
  );
  const started = performance.now();
  const result = await runPipeline({
    config,
    configFile: 'bench pipeline',
    reporter: silentReporter,
    env: { [keyEnv]: input.sandbox.api_key },
    media: false,
  });
  const ms = performance.now() - started;
  if (result.unchanged) {
    // Nothing new (a rerun): no run, no manifest; the result counts the requests.
    const { requests, studies } = result.unchanged;
    return { ms, status: result.status, runDir: null, requests, studies, tables: {}, timings_ms: {} };
  }
  const runDir = result.runDir as string;
  const run = await openStorage(runDir, input.s3Endpoint ? { endpoint: input.s3Endpoint } : {});
  const manifest = JSON.parse(String(await run.read('manifest.json'))) as Manifest;
  const counters = manifest.requests as CountersSnapshot;
  const requests = Object.values(counters.requests)
    .flatMap((byOutcome) => Object.values(byOutcome))
    .reduce((sum, n) => sum + n, 0);
  return {
    ms,
    status: result.status,
    runDir,
    requests,
    studies: manifest.studies.length,
    tables: manifest.tables,
    timings_ms: manifest.timings_ms,
  };
}
