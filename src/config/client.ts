/**
 * What a pipeline file's `source` section makes of the service's client: the options of
 * src/api/client.ts, for `run` and `studies` alike.
 */
import type { ApiClientOptions } from '../api/client.ts';
import { apiDeadlineMs, type PipelineConfig } from './schema.ts';

/** The client options a pipeline file's `source` section sets (run and studies alike). */
export function clientSettings(
  source: PipelineConfig['source'],
): Pick<
  ApiClientOptions,
  'apiKeyEnv' | 'concurrency' | 'timeoutMs' | 'deadlineMs' | 'maxBodyBytes' | 'retries' | 'maxRetryAfterMs'
> {
  return {
    apiKeyEnv: source.api_key_env,
    concurrency: source.concurrency,
    timeoutMs: source.timeout_ms,
    deadlineMs: apiDeadlineMs(source),
    maxBodyBytes: source.max_body_mib * MiB,
    retries: source.retries,
    maxRetryAfterMs: source.max_retry_after_s * 1000,
  };
}

const MiB = 1024 * 1024;
