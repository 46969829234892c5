/**
 * What a run opens before it plans: its client (the service, the embedded sandbox, or what an
 * earlier run recorded), its state store and the pipeline file with the command line applied.
 */
import { type ApiClient, createApiClient } from '../api/client.ts';
import { clientSettings } from '../config/client.ts';
import type { PipelineConfig } from '../config/schema.ts';
import { ConfigError } from '../errors.ts';
import { type StateStore, stateFileStore } from '../publish/state.ts';
import { inShard } from '../shard.ts';
import type { Storage } from '../storage/types.ts';
import { upgradingStateStore } from '../upgrade/index.ts';
import type { ProgressReporter } from './progress.ts';
import { openSource } from './source.ts';
import type { RunOptions, RunOverrides, WarningLog } from './types.ts';

/** The service (or the embedded sandbox), or the answers an earlier run recorded. */
export async function openClient(
  config: PipelineConfig,
  options: RunOptions,
  log: WarningLog,
): Promise<{ client: ApiClient; close(): Promise<void> }> {
  if (options.recorded) return { client: options.recorded.client, close: async () => {} };
  const source = await openSource(config, options.env, options.configFile);
  const client = createClient(source, config, log, options.reporter);
  return {
    client,
    async close() {
      client.close();
      await source.close();
    },
  };
}

/**
 * --state FILE names one state file; otherwise the state lives beside the runs, one object per
 * study, with what earlier versions left of it (src/upgrade/), and a shard writes only its own
 * studies'. One file for N shards would be written by all.
 */
export async function openStateStore(storage: Storage, options: RunOptions): Promise<StateStore> {
  const { shard } = options;
  if (options.stateFile !== undefined && shard) {
    throw new ConfigError(
      `--state ${options.stateFile} keeps every study's state in one file, which the shards of a sharded run would all write; leave --state out with --shard (each shard then keeps its studies' state in state/)`,
    );
  }
  if (options.stateFile !== undefined) return stateFileStore(options.stateFile);
  return upgradingStateStore(storage, shard ? (id) => inShard(id, shard) : undefined);
}

/** The pipeline file with the command line's overrides applied. */
export function applyOverrides(config: PipelineConfig, options: RunOverrides): PipelineConfig {
  return {
    ...config,
    source: { ...config.source, concurrency: options.concurrency ?? config.source.concurrency },
    output: {
      ...config.output,
      dir: options.out ?? config.output.dir,
      formats: options.formats ?? config.output.formats,
    },
    media: { ...config.media, enabled: options.media ?? config.media.enabled },
  };
}

function createClient(
  source: { baseUrl: string; apiKey: string },
  config: PipelineConfig,
  log: WarningLog,
  reporter: ProgressReporter,
): ApiClient {
  return createApiClient({
    baseUrl: source.baseUrl,
    apiKey: source.apiKey,
    ...clientSettings(config.source),
    onRetry(info) {
      reporter.retry(info);
      if (!info.retryAfterCapped) return;
      log.warn({
        code: 'retry_after_capped',
        message: `${info.operation} at ${info.url} asked to wait longer than allowed (Retry-After); waited ${Math.round(info.delayMs / 1000)} s instead`,
      });
    },
  });
}
