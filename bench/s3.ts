/**
 * An S3-protocol server (s3rver) on loopback for the bench's S3 variant: runs whose output is
 * s3://bench/<size>. It runs in the bench's own process, so the export's peak RSS (measured
 * in its child process) never includes it.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import S3rver from 's3rver';

export const benchBucket = 'bench';

export interface BenchS3 {
  endpoint: string;
  close(): Promise<void>;
}

/** Starts the server and sets s3rver's credentials in the environment the steps inherit. */
export async function startBenchS3(): Promise<BenchS3> {
  const directory = await mkdtemp(join(tmpdir(), 'study-export-bench-s3-'));
  const server = new S3rver({
    port: 0,
    address: '127.0.0.1',
    silent: true,
    directory,
    configureBuckets: [{ name: benchBucket }],
  });
  const { port } = await server.run();
  process.env.AWS_ACCESS_KEY_ID = 'S3RVER';
  process.env.AWS_SECRET_ACCESS_KEY = 'S3RVER';
  return {
    endpoint: `http://127.0.0.1:${port}`,
    async close() {
      await server.close();
      await rm(directory, { recursive: true, force: true });
    },
  };
}
