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
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { hostname } from 'node:os';
import { Readable } from 'node:stream';
import {
  AbortMultipartUploadCommand,
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  type S3ServiceException,
} from '@aws-sdk/client-s3';
import { ConfigError } from '../errors.ts';
import { isProcessAlive } from '../util/exit-cleanup.ts';
import { copyInto } from './copy.ts';
import { copyRangesThrough } from './copy-ranges.ts';
import { HashedOutputFile } from './output-file.ts';
import { isMissing, type Operation, storageError } from './s3-errors.ts';
import { leaseStateOf, takeLease } from './s3-lease.ts';
import { PartSpool, S3Output } from './s3-output.ts';
import type {
  ByteRange,
  CreateOptions,
  Lease,
  LeaseState,
  LeftoverOptions,
  ListedFile,
  OutputFile,
  RangeCopier,
  RangeSource,
  StagedFolder,
  Storage,
  StoredFile,
} from './types.ts';

export interface S3Settings {
  endpoint?: string | undefined;
  force_path_style?: boolean | undefined;
}

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

  async size(path: string): Promise<number | null> {
    try {
      const head = await this.client.send(
        new HeadObjectCommand({ Bucket: this.bucket, Key: this.key(path) }),
      );
      return head.ContentLength ?? 0;
    } catch (error) {
      if (isMissing(error)) return null;
      throw storageError(error, 'read', this.describe(path));
    }
  }

  async readStream(path: string, range?: ByteRange): Promise<Readable> {
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

  copyRanges(path: string, source: RangeSource, tail: Uint8Array, copier?: RangeCopier): Promise<StoredFile> {
    return copyRangesThrough(this, path, source, tail, copier?.runningSha256());
  }

  async *readChunks(path: string, range: ByteRange): AsyncIterable<Uint8Array> {
    for await (const chunk of await this.readStream(path, range)) yield chunk as Uint8Array;
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
    for (const leftover of await this.leftovers(runsPrefix, options)) {
      const run = `${runsPrefix}/${leftover.runId}`;
      // A run whose marker outlived its commit (the delete failed) keeps its files.
      if ((await this.read(`${run}/${options.manifest}`)) === null) await this.deleteAll(run);
      await this.abortUploads(run, leftover.uploadsBefore);
      await this.delete(`${STAGED_FOLDER}/${run}`);
    }
  }

  async hasLeftovers(runsPrefix: string, options: LeftoverOptions): Promise<boolean> {
    return (await this.leftovers(runsPrefix, options)).length > 0;
  }

  /**
   * The runs whose marker says they were killed: one started on this machine by a process that
   * is gone (all its uploads with it), or any older than the grace period (uploads started
   * before it: a run elsewhere cannot be asked whether it lives).
   */
  private async leftovers(
    runsPrefix: string,
    options: LeftoverOptions,
  ): Promise<{ runId: string; uploadsBefore: number }[]> {
    const cutoff = Date.now() - options.graceMs;
    const found: { runId: string; uploadsBefore: number }[] = [];
    for await (const marker of this.list(`${STAGED_FOLDER}/${runsPrefix}`)) {
      if (!options.owns(marker.path)) continue;
      if (await this.ownerGone(`${STAGED_FOLDER}/${runsPrefix}/${marker.path}`)) {
        found.push({ runId: marker.path, uploadsBefore: 0 });
      } else if (marker.modifiedAt <= cutoff) {
        found.push({ runId: marker.path, uploadsBefore: cutoff });
      }
    }
    return found;
  }

  /** Whether a marker was written by a process of this machine that no longer exists. */
  private async ownerGone(markerPath: string): Promise<boolean> {
    const bytes = await this.read(markerPath);
    if (bytes === null) return false;
    try {
      const { host, pid } = JSON.parse(bytes.toString('utf8')) as { host?: unknown; pid?: unknown };
      return (
        host === hostname() && Number.isInteger(pid) && pid !== process.pid && !isProcessAlive(pid as number)
      );
    } catch {
      return false;
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

  lease(path: string): Promise<Lease> {
    return takeLease(this, path);
  }

  leaseState(path: string): Promise<LeaseState> {
    return leaseStateOf(this, path);
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
