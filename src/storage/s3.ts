/**
 * S3-compatible object storage behind the storage seam (AWS S3, MinIO, R2, Ceph), with the
 * AWS SDK v3. Credentials, region and endpoint come from the standard AWS environment
 * variables and profiles; the pipeline file may add an endpoint and path-style addressing.
 *
 * Files are streamed as multipart uploads whose parts are filled in the scratch folder
 * (s3-output.ts), so media.zip and large tables never sit whole in memory or on local disk,
 * and memory does not grow with the number of files being written. There is no rename on object storage: a run is written in place under
 * runs/<run id>/ and its manifest, written last, is what makes it a run (readers, verify and
 * the next run ignore a run folder without one). A marker, .staged/runs/<run id>, says a
 * run is in progress; the next run removes what a killed run left once it is older than the
 * grace period: the run's objects, its marker and its unfinished multipart uploads.
 */
import { createHash, randomUUID } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { hostname } from 'node:os';
import { Readable } from 'node:stream';
import {
  AbortMultipartUploadCommand,
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  type S3ServiceException,
} from '@aws-sdk/client-s3';
import { ConfigError, RunError, type StudyExportError } from '../errors.ts';
import { isProcessAlive } from '../util/exit-cleanup.ts';
import { copyInto } from './copy.ts';
import { HashedOutputFile } from './output-file.ts';
import { PartSpool, S3Output } from './s3-output.ts';
import type {
  CreateOptions,
  Lease,
  LeftoverOptions,
  ListedFile,
  OutputFile,
  StagedFolder,
  Storage,
  StoredFile,
} from './types.ts';

export interface S3Settings {
  endpoint?: string | undefined;
  force_path_style?: boolean | undefined;
}

/** A lease is good for this long and renewed at a third of it while the run lives. */
const LEASE_MS = 10 * 60 * 1000;
const STAGED_FOLDER = '.staged';

export async function openS3Storage(location: string, settings: S3Settings): Promise<Storage> {
  const { bucket, prefix } = parseS3Location(location);
  const client = await createClient(settings);
  return new S3Storage({ client, bucket, uploads: new Set(), spool: new PartSpool() }, prefix);
}

/** s3://bucket/prefix, prefix without its trailing slashes ('' for the bucket's root). */
export function parseS3Location(location: string): { bucket: string; prefix: string } {
  const match = /^s3:\/\/([^/]+)\/?(.*)$/i.exec(location);
  if (!match?.[1]) throw new ConfigError(`${location}: expected s3://bucket/prefix`);
  return { bucket: match[1], prefix: (match[2] ?? '').replace(/\/+$/, '') };
}

async function createClient(settings: S3Settings): Promise<S3Client> {
  const env = process.env;
  const endpoint = settings.endpoint ?? env.AWS_ENDPOINT_URL_S3 ?? env.AWS_ENDPOINT_URL;
  const options = {
    ...(settings.endpoint ? { endpoint: settings.endpoint } : {}),
    // S3-compatible servers on their own host name rarely have a bucket sub-domain.
    forcePathStyle: settings.force_path_style ?? endpoint !== undefined,
    // Checksums beyond what the protocol requires are not understood by every S3-compatible
    // server; the manifest's sha256 (re-checked by verify) covers the bytes.
    requestChecksumCalculation: 'WHEN_REQUIRED' as const,
    responseChecksumValidation: 'WHEN_REQUIRED' as const,
    requestHandler: { connectionTimeout: 10_000, requestTimeout: 120_000 },
  };
  const client = new S3Client(options);
  try {
    await client.config.region();
    return client;
  } catch {
    // No region in the environment or the profile: S3-compatible servers mostly ignore it.
    client.destroy();
    return new S3Client({ ...options, region: 'us-east-1' });
  }
}

/** What every storage of one bucket shares: the client, the open files and their parts. */
interface Bucket {
  client: S3Client;
  bucket: string;
  uploads: Set<S3Output>;
  spool: PartSpool;
}

class S3Storage implements Storage {
  readonly location: string;

  constructor(
    private readonly at_: Bucket,
    private readonly prefix: string,
  ) {
    this.location = `s3://${at_.bucket}${prefix ? `/${prefix}` : ''}`;
  }

  private key(path: string): string {
    return [this.prefix, path].filter((part) => part !== '').join('/');
  }

  private get client(): S3Client {
    return this.at_.client;
  }

  private get bucket(): string {
    return this.at_.bucket;
  }

  describe(path: string): string {
    return path === '' ? this.location : `${this.location}/${path}`;
  }

  at(prefix: string): Storage {
    return new S3Storage(this.at_, this.key(prefix));
  }

  async create(path: string, options: CreateOptions = {}): Promise<OutputFile> {
    const where = this.describe(path);
    const { client, bucket, spool, uploads } = this.at_;
    const output = new S3Output({
      client,
      bucket,
      key: this.key(path),
      spool,
      fail: (error) => storageError(error, 'write', where),
    });
    uploads.add(output);
    const sink = {
      write: (bytes: Uint8Array) => output.write(bytes),
      end: () => output.end().finally(() => uploads.delete(output)),
      destroy: () => {
        uploads.delete(output);
        return output.destroy();
      },
    };
    return new HashedOutputFile(path, where, sink, options.sha256);
  }

  async moveIn(localPath: string, path: string): Promise<void> {
    await copyInto(createReadStream(localPath), this, path);
  }

  /** Keys have no folders to rename: the files go one by one. */
  async moveFolderIn(): Promise<boolean> {
    return false;
  }

  async put(path: string, content: string | Uint8Array): Promise<StoredFile> {
    await this.guard('write', path, () =>
      this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key: this.key(path), Body: content })),
    );
    const bytes = typeof content === 'string' ? Buffer.byteLength(content) : content.byteLength;
    return { path, bytes, sha256: createHash('sha256').update(content).digest('hex') };
  }

  async putIfAbsent(path: string, content: string): Promise<boolean> {
    try {
      await this.client.send(
        new PutObjectCommand({ Bucket: this.bucket, Key: this.key(path), Body: content, IfNoneMatch: '*' }),
      );
      return true;
    } catch (error) {
      const status = (error as S3ServiceException).$metadata?.httpStatusCode;
      if (status === 412 || status === 409) return false;
      throw storageError(error, 'write', this.describe(path));
    }
  }

  async read(path: string): Promise<Buffer | null> {
    try {
      const object = await this.client.send(
        new GetObjectCommand({ Bucket: this.bucket, Key: this.key(path) }),
      );
      return Buffer.from(
        await (object.Body as { transformToByteArray(): Promise<Uint8Array> }).transformToByteArray(),
      );
    } catch (error) {
      if (isMissing(error)) return null;
      throw storageError(error, 'read', this.describe(path));
    }
  }

  async readStream(path: string, range?: { start: number; end: number }): Promise<Readable> {
    if (range && range.end <= range.start) return Readable.from([]);
    const object = await this.guard('read', path, () =>
      this.client.send(
        new GetObjectCommand({
          Bucket: this.bucket,
          Key: this.key(path),
          ...(range ? { Range: `bytes=${range.start}-${range.end - 1}` } : {}),
        }),
      ),
    );
    return object.Body as Readable;
  }

  async *list(prefix: string): AsyncIterable<ListedFile> {
    const base = `${this.key(prefix)}${this.key(prefix) ? '/' : ''}`;
    let token: string | undefined;
    do {
      const page = await this.guard('list', prefix, () =>
        this.client.send(
          new ListObjectsV2Command({ Bucket: this.bucket, Prefix: base, ContinuationToken: token }),
        ),
      );
      for (const object of page.Contents ?? []) {
        if (!object.Key) continue;
        yield {
          path: object.Key.slice(base.length),
          bytes: object.Size ?? 0,
          modifiedAt: object.LastModified?.getTime() ?? 0,
        };
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }

  async listFolders(prefix: string): Promise<string[]> {
    const base = `${this.key(prefix)}${this.key(prefix) ? '/' : ''}`;
    const names: string[] = [];
    let token: string | undefined;
    do {
      const page = await this.guard('list', prefix, () =>
        this.client.send(
          new ListObjectsV2Command({
            Bucket: this.bucket,
            Prefix: base,
            Delimiter: '/',
            ContinuationToken: token,
          }),
        ),
      );
      for (const common of page.CommonPrefixes ?? []) {
        if (common.Prefix) names.push(common.Prefix.slice(base.length).replace(/\/$/, ''));
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return names;
  }

  async delete(path: string): Promise<void> {
    await this.guard('delete', path, () =>
      this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: this.key(path) })),
    );
  }

  async deleteAll(prefix: string): Promise<void> {
    let batch: string[] = [];
    const flush = async () => {
      if (batch.length === 0) return;
      const keys = batch;
      batch = [];
      await this.guard('delete', prefix, () =>
        this.client.send(
          new DeleteObjectsCommand({
            Bucket: this.bucket,
            Delete: { Objects: keys.map((Key) => ({ Key })), Quiet: true },
          }),
        ),
      );
    };
    for await (const file of this.list(prefix)) {
      batch.push(this.key(`${prefix}/${file.path}`));
      if (batch.length === 1000) await flush();
    }
    await flush();
  }

  async stage(prefix: string): Promise<StagedFolder> {
    const marker = `${STAGED_FOLDER}/${prefix}`;
    await this.put(
      marker,
      `${JSON.stringify({ host: hostname(), pid: process.pid, started_at: new Date().toISOString() })}\n`,
    );
    const uploads = new Set<S3Output>();
    const files = new S3Storage({ ...this.at_, uploads }, this.key(prefix));
    return {
      files,
      finalLocation: this.describe(prefix),
      // The manifest, written last by the run, has made it a run; the marker only goes.
      commit: () => this.delete(marker),
      discard: async () => {
        await Promise.all([...uploads].map((upload) => upload.destroy()));
        await this.deleteAll(prefix);
        await this.abortUploads(prefix, 0);
        await this.delete(marker);
      },
    };
  }

  async removeLeftovers(runsPrefix: string, options: LeftoverOptions): Promise<void> {
    const cutoff = Date.now() - options.graceMs;
    for await (const marker of this.list(`${STAGED_FOLDER}/${runsPrefix}`)) {
      if (marker.modifiedAt > cutoff || !options.owns(marker.path)) continue;
      const run = `${runsPrefix}/${marker.path}`;
      // A run whose marker outlived its commit (the delete failed) keeps its files.
      if ((await this.read(`${run}/${options.manifest}`)) === null) await this.deleteAll(run);
      await this.abortUploads(run, cutoff);
      await this.delete(`${STAGED_FOLDER}/${run}`);
    }
  }

  /**
   * Aborts the unfinished multipart uploads under `prefix` started before `before` (0: all),
   * page by page (at most 1,000 uploads a listing).
   */
  private async abortUploads(prefix: string, before: number): Promise<void> {
    let marker: { KeyMarker?: string; UploadIdMarker?: string } = {};
    for (;;) {
      let listed: {
        Uploads?: { Key?: string; UploadId?: string; Initiated?: Date }[];
        IsTruncated?: boolean;
        NextKeyMarker?: string;
        NextUploadIdMarker?: string;
      };
      try {
        listed = await this.client.send(
          new ListMultipartUploadsCommand({ Bucket: this.bucket, Prefix: `${this.key(prefix)}/`, ...marker }),
        );
      } catch (error) {
        // Servers without this call (s3rver, some S3-compatible ones): a lifecycle rule that
        // aborts incomplete uploads does it there (docs/object-storage.md).
        if ((error as S3ServiceException).$metadata?.httpStatusCode === 501) return;
        throw storageError(error, 'list', this.describe(prefix));
      }
      for (const upload of listed.Uploads ?? []) {
        if (!upload.Key || !upload.UploadId) continue;
        if (before > 0 && (upload.Initiated?.getTime() ?? 0) > before) continue;
        await this.client.send(
          new AbortMultipartUploadCommand({
            Bucket: this.bucket,
            Key: upload.Key,
            UploadId: upload.UploadId,
          }),
        );
      }
      if (!listed.IsTruncated || listed.NextKeyMarker === undefined) return;
      marker = {
        KeyMarker: listed.NextKeyMarker,
        ...(listed.NextUploadIdMarker === undefined ? {} : { UploadIdMarker: listed.NextUploadIdMarker }),
      };
    }
  }

  /**
   * An object holding the owner and an expiry, created with If-None-Match: * so that of two
   * runs starting together only one gets it. Servers that ignore the condition (s3rver)
   * only have the read before the write (docs/object-storage.md). Renewed while the run lives; one whose
   * expiry has passed was left by a run that died and is taken over.
   */
  async lease(path: string): Promise<Lease> {
    const owner = `${hostname()}:${process.pid}:${randomUUID()}`;
    const content = () =>
      `${JSON.stringify({ owner, host: hostname(), pid: process.pid, expires_at: new Date(Date.now() + LEASE_MS).toISOString() })}\n`;
    let taken = false;
    for (let attempt = 0; attempt < 2 && !taken; attempt++) {
      const held = await this.read(path);
      if (held !== null) {
        const holder = parseLease(held);
        if (holder && isLive(holder)) {
          throw new ConfigError(
            `another run of this pipeline is in progress (${holder.owner} holds ${this.describe(path)} until ${holder.expires_at}); wait for it, or delete that object if that run is dead`,
            { context: { file: this.describe(path) } },
          );
        }
        // Its run died without releasing it: expired, or its process on this machine is gone.
        await this.delete(path);
      }
      taken = await this.putIfAbsent(path, content());
    }
    if (!taken) throw new ConfigError(`could not take the lease ${this.describe(path)}`);
    const renewal = setInterval(() => {
      this.put(path, content()).catch(() => {});
    }, LEASE_MS / 3);
    renewal.unref();
    return {
      release: async () => {
        clearInterval(renewal);
        const held = await this.read(path);
        if (held !== null && parseLease(held)?.owner === owner) await this.delete(path);
      },
    };
  }

  /** Runs one request; a failure becomes a plain-words error naming `path`. */
  private async guard<T>(operation: Operation, path: string, request: () => Promise<T>): Promise<T> {
    try {
      return await request();
    } catch (error) {
      throw storageError(error, operation, this.describe(path));
    }
  }
}

interface LeaseHolder {
  owner: string;
  host: string;
  pid: number;
  expires_at: string;
}

function parseLease(bytes: Buffer): LeaseHolder | null {
  try {
    const parsed = JSON.parse(bytes.toString('utf8')) as Partial<LeaseHolder>;
    if (typeof parsed.owner === 'string' && typeof parsed.expires_at === 'string') {
      return {
        owner: parsed.owner,
        host: String(parsed.host),
        pid: Number(parsed.pid),
        expires_at: parsed.expires_at,
      };
    }
  } catch {}
  return null;
}

/** Not expired, and, when its run was on this machine, that process still exists. */
function isLive(holder: LeaseHolder): boolean {
  if (Date.parse(holder.expires_at) <= Date.now()) return false;
  if (holder.host !== hostname() || holder.pid === process.pid) return true;
  return Number.isInteger(holder.pid) && isProcessAlive(holder.pid);
}

type Operation = 'read' | 'write' | 'list' | 'delete';

/** A storage failure in plain words, naming the object; never a credential. */
export function storageError(error: unknown, operation: Operation, where: string): StudyExportError {
  if (error instanceof RunError || error instanceof ConfigError) return error;
  const name = (error as { name?: string }).name ?? '';
  const status = (error as S3ServiceException).$metadata?.httpStatusCode;
  const reason = error instanceof Error ? error.message : String(error);
  const context = { file: where, operation: `storage ${operation}`, ...(status ? { status } : {}) };
  const bucket = where.replace(/^(s3:\/\/[^/]+).*$/, '$1');
  if (name === 'NoSuchBucket') {
    return new ConfigError(`${bucket}: the bucket does not exist (check output.dir and the endpoint)`, {
      context,
      cause: error,
    });
  }
  if (
    ['InvalidAccessKeyId', 'SignatureDoesNotMatch', 'AccessDenied', 'ExpiredToken', 'InvalidToken'].includes(
      name,
    ) ||
    status === 401 ||
    status === 403
  ) {
    return new ConfigError(
      `${where}: the storage refused the credentials (${name || status}); check AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY or AWS_PROFILE, and the bucket's permissions`,
      { context, cause: error },
    );
  }
  if (name === 'CredentialsProviderError') {
    return new ConfigError(
      `${where}: no AWS credentials found; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE`,
      { context, cause: error },
    );
  }
  if (status !== undefined && status >= 500) {
    return new RunError(
      `${where}: the storage answered ${status} (${name}) to a ${operation}, after retries`,
      {
        context,
        cause: error,
      },
    );
  }
  const code = (error as NodeJS.ErrnoException).code;
  if (code || name === 'TimeoutError') {
    return new RunError(
      `${where}: cannot reach the storage (${code ?? name}); check output.s3.endpoint or AWS_ENDPOINT_URL and your network`,
      { context, cause: error },
    );
  }
  return new RunError(`${where}: storage ${operation} failed: ${reason}`, { context, cause: error });
}

function isMissing(error: unknown): boolean {
  const name = (error as { name?: string }).name;
  return name === 'NoSuchKey' || name === 'NotFound';
}
