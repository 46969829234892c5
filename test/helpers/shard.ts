/** The pipeline file the sharded tests start their `study-export run --shard K/N` processes with. */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Sandbox } from '../../src/sandbox/index.ts';
import { KEY_ENV } from './run.ts';

export interface ShardedOutput {
  /** A folder, or an s3:// URL. */
  dir: string;
  formats: string[];
  /** The S3 endpoint the pipeline file names (else the environment's). */
  endpoint?: string;
  media?: boolean;
}

/**
 * dir/sharded.yaml: the pipeline "sharded" on the sandbox, four requests at once, into `output`;
 * returns its path.
 */
export async function writeShardedPipeline(
  sandbox: Sandbox,
  dir: string,
  output: ShardedOutput,
): Promise<string> {
  const s3 = output.endpoint === undefined ? '' : `, s3: { endpoint: "${output.endpoint}" }`;
  const file = join(dir, 'sharded.yaml');
  await writeFile(
    file,
    [
      'name: sharded',
      `source: { base_url: "${sandbox.base_url}", api_key_env: ${KEY_ENV}, concurrency: 4 }`,
      `output: { dir: "${output.dir}", formats: [${output.formats.join(', ')}]${s3} }`,
      `media: { enabled: ${output.media ?? false} }`,
    ].join('\n'),
  );
  return file;
}
