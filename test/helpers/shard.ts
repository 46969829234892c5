/** The pipeline file the sharded tests start their `study-export run --shard K/N` processes with. */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect } from 'vitest';
import type { Sandbox } from '../../src/sandbox/index.ts';
import { validateDataPackage } from './frictionless.ts';
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

/**
 * The responses the shards' descriptors of current/ (datapackage-shard-K-of-N.json in `current`)
 * name together, each descriptor valid to the Frictionless reference library.
 */
export async function responsesInShardDescriptors(current: string, count: number): Promise<number> {
  let responses = 0;
  for (let index = 1; index <= count; index++) {
    const label = `shard-${index}-of-${count}`;
    const report = await validateDataPackage(current, `datapackage-${label}.json`);
    expect(report.errors, label).toEqual([]);
    responses += report.read.responses ?? 0;
  }
  return responses;
}
