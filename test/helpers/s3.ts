/**
 * An S3-protocol server on loopback (s3rver, port 0, a temporary folder), and a plain SDK
 * client to read back what the tool wrote: nothing here is the tool's own storage code.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import S3rver from 's3rver';
import { type Sandbox, type SandboxOptions, startSandbox } from '../../src/sandbox/index.ts';
import { EnvironmentPatch } from './environment.ts';

/** s3rver's fixed credentials; it checks every request's signature against them. */
export const S3_CREDENTIALS = { AWS_ACCESS_KEY_ID: 'S3RVER', AWS_SECRET_ACCESS_KEY: 'S3RVER' };

export interface S3Server {
  endpoint: string;
  /** Where s3rver keeps buckets (and the parts of unfinished multipart uploads, under <bucket>/._S3rver_uploads). */
  directory: string;
  client: S3Client;
  /** Keys under `prefix`, sorted. */
  keys(bucket: string, prefix?: string): Promise<string[]>;
  get(bucket: string, key: string): Promise<Buffer>;
  put(bucket: string, key: string, body: string): Promise<void>;
  /** Calls `listener` with every request the server receives (to count a run's requests). */
  onRequest(listener: (request: IncomingMessage) => void): void;
  close(): Promise<void>;
}

export async function startS3(buckets: string[]): Promise<S3Server> {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const directory = await mkdtemp(join(tmpdir(), 'study-export-s3-'));
  const server = new S3rver({
    port: 0,
    address: '127.0.0.1',
    silent: true,
    directory,
    configureBuckets: buckets.map((name) => ({ name })),
  });
  const { port } = await server.run();
  const endpoint = `http://127.0.0.1:${port}`;
  const client = new S3Client({
    endpoint,
    forcePathStyle: true,
    region: 'us-east-1',
    credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
  });
  return {
    endpoint,
    directory,
    client,
    async keys(bucket, prefix = '') {
      const keys: string[] = [];
      let token: string | undefined;
      do {
        const page = await client.send(
          new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }),
        );
        for (const object of page.Contents ?? []) if (object.Key) keys.push(object.Key);
        token = page.IsTruncated ? page.NextContinuationToken : undefined;
      } while (token);
      return keys.sort();
    },
    async get(bucket, key) {
      const object = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
      return Buffer.from(await object.Body!.transformToByteArray());
    },
    async put(bucket, key, body) {
      await client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body }));
    },
    onRequest(listener) {
      (server as unknown as { httpServer: import('node:http').Server }).httpServer.on('request', listener);
    },
    async close() {
      client.destroy();
      await server.close();
      await rm(directory, { recursive: true, force: true });
    },
  };
}

/** The objects under `prefix` of `bucket` copied into `dir`, each at its key less `prefix`. */
export async function downloadObjects(
  s3: S3Server,
  bucket: string,
  prefix: string,
  dir: string,
): Promise<void> {
  for (const key of await s3.keys(bucket, prefix)) {
    const path = join(dir, ...key.slice(prefix.length).split('/'));
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, await s3.get(bucket, key));
  }
}

/**
 * A test file's sandbox and s3rver (with the bucket "exports"), s3rver's credentials in the
 * environment until `stop`.
 */
export async function startSandboxAndS3(
  options: SandboxOptions,
): Promise<{ sandbox: Sandbox; s3: S3Server; stop(): Promise<void> }> {
  const environment = new EnvironmentPatch();
  const sandbox = await startSandbox(options);
  const s3 = await startS3(['exports']);
  environment.set(S3_CREDENTIALS);
  return {
    sandbox,
    s3,
    async stop() {
      environment.restore();
      await s3.close();
      await sandbox.close();
    },
  };
}

/** The keys a multi-object delete's XML body names, unescaped. */
export function deletedKeys(body: string): string[] {
  return [...body.matchAll(/<Key>([^<]*)<\/Key>/g)].map((match) => unescapeXml(match[1] ?? ''));
}

function unescapeXml(text: string): string {
  return text
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'")
    .replace(/&amp;/g, '&');
}
