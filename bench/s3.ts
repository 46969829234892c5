/**
 * An S3-protocol server (s3rver) on loopback for the bench's S3 variant: runs whose output is
 * s3://bench/<size>. It runs in the bench's own process, so the export's peak RSS (measured
 * in its child process) never includes it. The same server the storage tests start.
 */
import { S3_CREDENTIALS, type S3Server, startS3 } from '../test/helpers/s3.ts';

export const benchBucket = 'bench';

export type BenchS3 = Pick<S3Server, 'endpoint' | 'close'>;

/** Starts the server and sets s3rver's credentials in the environment the steps inherit. */
export async function startBenchS3(): Promise<BenchS3> {
  const server = await startS3([benchBucket]);
  Object.assign(process.env, S3_CREDENTIALS);
  return server;
}
