/**
 * Where a run reads from: the configured base_url with the key from its environment
 * variable, or, for base_url "sandbox", the embedded reference service started in-process.
 */
import { resolveApiKey } from '../config/load.ts';
import type { PipelineConfig } from '../config/schema.ts';
import { startSandbox } from '../sandbox/index.ts';

export interface OpenedSource {
  baseUrl: string;
  apiKey: string;
  close(): Promise<void>;
}

export async function openSource(
  config: PipelineConfig,
  env: NodeJS.ProcessEnv,
  configFile: string,
): Promise<OpenedSource> {
  const apiKey = resolveApiKey(config, env, configFile);
  if (apiKey !== undefined) {
    return { baseUrl: config.source.base_url, apiKey, close: async () => {} };
  }
  const sandbox = await startSandbox();
  return { baseUrl: sandbox.base_url, apiKey: sandbox.api_key, close: () => sandbox.close() };
}
