/**
 * Listings of the store past 1,000 keys. s3rver cannot show it (its next continuation token
 * is made from the page's last object, which a page of common prefixes does not have), so
 * this is a small S3-protocol server on loopback written here:
 * ListObjectsV2 answered at most `maxKeys` keys (and common prefixes) a page with a
 * continuation token, ListMultipartUploads at most 1,000 uploads a page with key and upload-id
 * markers, DeleteObjects refusing more than 1,000 keys, as AWS S3 does. The tool's storage
 * talks to it through the real @aws-sdk/client-s3.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { openS3Storage } from '../../src/storage/s3.ts';
import type { Storage } from '../../src/storage/types.ts';
import { EnvironmentPatch } from '../helpers/environment.ts';
import { deletedKeys } from '../helpers/s3.ts';

const BUCKET = 'paged';

interface Upload {
  key: string;
  uploadId: string;
  initiated: Date;
}

interface Logged {
  method: string;
  query: URLSearchParams;
  /** Keys in a DeleteObjects body. */
  deleted?: number;
  /** Keys and prefixes (ListObjectsV2) or uploads listed in the answer. */
  listed?: number;
}

/** A key as XML text. */
const xml = (text: string) =>
  text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

class PagingS3 {
  readonly objects = new Map<string, Buffer>();
  readonly uploads: Upload[] = [];
  readonly log: Logged[] = [];
  private server: Server | null = null;

  /** Largest page of ListObjectsV2, as AWS S3 answers (1,000), unless a request asks for fewer. */
  constructor(private readonly maxKeys = 1000) {}

  async start(): Promise<string> {
    this.server = createServer((request, response) => {
      this.handle(request, response).catch((error: Error) => {
        response.statusCode = 500;
        response.end(error.message);
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => this.server?.close(() => resolve()));
  }

  requests(method: string, has: string): Logged[] {
    return this.log.filter((entry) => entry.method === method && entry.query.has(has));
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    const url = new URL(request.url ?? '/', 'http://s3.local');
    const [bucket, ...rest] = url.pathname.slice(1).split('/');
    const key = decodeURIComponent(rest.join('/'));
    const entry: Logged = { method: request.method ?? '', query: url.searchParams };
    this.log.push(entry);
    if (bucket !== BUCKET) return this.error(response, 404, 'NoSuchBucket');
    const query = url.searchParams;
    if (request.method === 'GET' && key === '' && query.get('list-type') === '2')
      return this.listObjects(query, entry, response);
    if (request.method === 'GET' && key === '' && query.has('uploads'))
      return this.listUploads(query, entry, response);
    if (request.method === 'POST' && key === '' && query.has('delete')) {
      const keys = deletedKeys(body.toString('utf8'));
      entry.deleted = keys.length;
      if (keys.length > 1000) return this.error(response, 400, 'MalformedXML');
      for (const deleted of keys) this.objects.delete(deleted);
      return this.reply(response, 200, '<DeleteResult></DeleteResult>');
    }
    if (request.method === 'DELETE' && query.has('uploadId')) {
      const at = this.uploads.findIndex((u) => u.key === key && u.uploadId === query.get('uploadId'));
      if (at < 0) return this.error(response, 404, 'NoSuchUpload');
      this.uploads.splice(at, 1);
      return this.reply(response, 204, '');
    }
    if (request.method === 'DELETE') {
      this.objects.delete(key);
      return this.reply(response, 204, '');
    }
    if (request.method === 'PUT') {
      this.objects.set(key, body);
      response.setHeader('etag', '"0"');
      return this.reply(response, 200, '');
    }
    if (request.method === 'GET') {
      const object = this.objects.get(key);
      if (!object) return this.error(response, 404, 'NoSuchKey');
      response.statusCode = 200;
      response.setHeader('content-length', object.length);
      response.end(object);
      return;
    }
    return this.error(response, 501, 'NotImplemented');
  }

  /** Keys in byte order, rolled up at the delimiter; a page holds at most maxKeys keys and prefixes. */
  private listObjects(query: URLSearchParams, entry: Logged, response: ServerResponse): void {
    const prefix = query.get('prefix') ?? '';
    const delimiter = query.get('delimiter') ?? '';
    const token = query.get('continuation-token');
    const after = token === null ? (query.get('start-after') ?? '') : Buffer.from(token, 'base64').toString();
    const limit = Math.min(this.maxKeys, Number(query.get('max-keys') ?? this.maxKeys));
    const rows: { key?: string; prefix?: string; name: string }[] = [];
    const seen = new Set<string>();
    for (const key of [...this.objects.keys()].sort()) {
      if (!key.startsWith(prefix)) continue;
      const cut = delimiter ? key.indexOf(delimiter, prefix.length) : -1;
      const row =
        cut < 0 ? { key, name: key } : { prefix: key.slice(0, cut + 1), name: key.slice(0, cut + 1) };
      if (row.name <= after || seen.has(row.name)) continue;
      seen.add(row.name);
      rows.push(row);
    }
    const page = rows.slice(0, limit);
    const truncated = rows.length > limit;
    entry.listed = page.length;
    const last = page.at(-1)?.name ?? '';
    const now = new Date().toISOString();
    this.reply(
      response,
      200,
      `<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>${BUCKET}</Name>` +
        `<Prefix>${xml(prefix)}</Prefix><KeyCount>${page.length}</KeyCount><MaxKeys>${limit}</MaxKeys>` +
        (delimiter ? `<Delimiter>${xml(delimiter)}</Delimiter>` : '') +
        `<IsTruncated>${truncated}</IsTruncated>` +
        (token === null ? '' : `<ContinuationToken>${xml(token)}</ContinuationToken>`) +
        (truncated
          ? `<NextContinuationToken>${Buffer.from(last).toString('base64')}</NextContinuationToken>`
          : '') +
        page
          .map((row) =>
            row.key !== undefined
              ? `<Contents><Key>${xml(row.key)}</Key><LastModified>${now}</LastModified><ETag>"0"</ETag>` +
                `<Size>${this.objects.get(row.key)!.length}</Size><StorageClass>STANDARD</StorageClass></Contents>`
              : `<CommonPrefixes><Prefix>${xml(row.prefix!)}</Prefix></CommonPrefixes>`,
          )
          .join('') +
        '</ListBucketResult>',
    );
  }

  /** Uploads by key then upload id, 1,000 a page, resumed after (key-marker, upload-id-marker). */
  private listUploads(query: URLSearchParams, entry: Logged, response: ServerResponse): void {
    const prefix = query.get('prefix') ?? '';
    const keyMarker = query.get('key-marker') ?? '';
    const idMarker = query.get('upload-id-marker') ?? '';
    const limit = Math.min(1000, Number(query.get('max-uploads') ?? 1000));
    const after = (u: Upload) =>
      keyMarker === '' ||
      u.key > keyMarker ||
      (u.key === keyMarker && idMarker !== '' && u.uploadId > idMarker);
    const rows = this.uploads
      .filter((u) => u.key.startsWith(prefix) && after(u))
      .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : a.uploadId < b.uploadId ? -1 : 1));
    const page = rows.slice(0, limit);
    const truncated = rows.length > limit;
    entry.listed = page.length;
    const last = page.at(-1);
    this.reply(
      response,
      200,
      `<ListMultipartUploadsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Bucket>${BUCKET}</Bucket>` +
        `<KeyMarker>${xml(keyMarker)}</KeyMarker><UploadIdMarker>${xml(idMarker)}</UploadIdMarker>` +
        (truncated && last
          ? `<NextKeyMarker>${xml(last.key)}</NextKeyMarker><NextUploadIdMarker>${xml(last.uploadId)}</NextUploadIdMarker>`
          : '') +
        `<Prefix>${xml(prefix)}</Prefix><MaxUploads>${limit}</MaxUploads><IsTruncated>${truncated}</IsTruncated>` +
        page
          .map(
            (u) =>
              `<Upload><Key>${xml(u.key)}</Key><UploadId>${xml(u.uploadId)}</UploadId>` +
              `<Initiated>${u.initiated.toISOString()}</Initiated><StorageClass>STANDARD</StorageClass></Upload>`,
          )
          .join('') +
        '</ListMultipartUploadsResult>',
    );
  }

  private reply(response: ServerResponse, status: number, body: string): void {
    response.statusCode = status;
    if (body) response.setHeader('content-type', 'application/xml');
    response.end(body ? `<?xml version="1.0" encoding="UTF-8"?>\n${body}` : '');
  }

  private error(response: ServerResponse, status: number, code: string): void {
    this.reply(response, status, `<Error><Code>${code}</Code><Message>${code}</Message></Error>`);
  }
}

const environment = new EnvironmentPatch();
let s3: PagingS3;
let storage: Storage;

beforeAll(async () => {
  environment.set({
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
    AWS_ACCESS_KEY_ID: 'LOOPBACK',
    AWS_SECRET_ACCESS_KEY: 'loopback-secret',
    AWS_REGION: 'us-east-1',
    AWS_PROFILE: undefined,
    AWS_ENDPOINT_URL: undefined,
    AWS_ENDPOINT_URL_S3: undefined,
  });
  s3 = new PagingS3();
  const endpoint = await s3.start();
  storage = await openS3Storage(`s3://${BUCKET}/exports`, { endpoint });
});
afterAll(async () => {
  await s3?.close();
  environment.restore();
});
beforeEach(() => {
  s3.objects.clear();
  s3.uploads.length = 0;
  s3.log.length = 0;
});

const pad = (n: number) => String(n).padStart(5, '0');

describe('store listings past 1,000 keys', () => {
  it('lists 2,500 files under one prefix in three pages, each asked with the last page’s token', async () => {
    for (let i = 0; i < 2500; i++)
      s3.objects.set(`exports/current/part-${pad(i)}.parquet`, Buffer.from(`${i}`));
    s3.objects.set('exports/other/not-listed', Buffer.from('x'));
    const listed: string[] = [];
    for await (const file of storage.list('current')) listed.push(file.path);
    expect(listed).toHaveLength(2500);
    expect(new Set(listed).size).toBe(2500);
    expect(listed[0]).toBe('part-00000.parquet');
    expect(listed[2499]).toBe('part-02499.parquet');
    const pages = s3.requests('GET', 'list-type');
    expect(pages.map((p) => p.listed)).toEqual([1000, 1000, 500]);
    expect(pages[0]!.query.has('continuation-token')).toBe(false);
    expect(pages[1]!.query.get('continuation-token')).toBe(
      Buffer.from('exports/current/part-00999.parquet').toString('base64'),
    );
    expect(pages[2]!.query.get('continuation-token')).toBe(
      Buffer.from('exports/current/part-01999.parquet').toString('base64'),
    );
  });

  it('lists 1,500 folders (each of several files) in two pages of common prefixes', async () => {
    for (let i = 0; i < 1500; i++) {
      s3.objects.set(`exports/state/study-${pad(i)}/state.json`, Buffer.from('{}'));
      s3.objects.set(`exports/state/study-${pad(i)}/extra.json`, Buffer.from('{}'));
    }
    s3.objects.set('exports/state/loose-file.json', Buffer.from('{}'));
    const folders = await storage.listFolders('state');
    expect(folders).toHaveLength(1500);
    expect(folders).toEqual(Array.from({ length: 1500 }, (_, i) => `study-${pad(i)}`));
    const pages = s3.requests('GET', 'list-type');
    expect(pages).toHaveLength(2);
    expect(pages.every((p) => p.query.get('delimiter') === '/')).toBe(true);
  });

  it('deletes 2,500 files in batches of at most 1,000 keys, and none is left', async () => {
    for (let i = 0; i < 2500; i++) s3.objects.set(`exports/runs/r1/media/f-${pad(i)}`, Buffer.from('m'));
    s3.objects.set('exports/runs/r2/kept', Buffer.from('k'));
    await storage.deleteAll('runs/r1');
    expect([...s3.objects.keys()]).toEqual(['exports/runs/r2/kept']);
    const batches = s3.requests('POST', 'delete').map((p) => p.deleted);
    expect(batches.reduce((a, b) => a! + b!, 0)).toBe(2500);
    expect(batches.every((n) => n! <= 1000)).toBe(true);
  });

  it('discarding a run aborts its 1,200 unfinished multipart uploads, across two pages of the listing', async () => {
    const staged = await storage.stage('runs/r3');
    for (let i = 0; i < 1200; i++) {
      s3.uploads.push({ key: `exports/runs/r3/part-${pad(i)}`, uploadId: `u${i}`, initiated: new Date() });
    }
    s3.uploads.push({ key: 'exports/runs/r4/other', uploadId: 'keep', initiated: new Date() });
    for (let i = 0; i < 1100; i++) s3.objects.set(`exports/runs/r3/file-${pad(i)}`, Buffer.from('f'));
    await staged.discard();
    expect(s3.uploads.map((u) => u.uploadId)).toEqual(['keep']);
    expect([...s3.objects.keys()]).toEqual([]);
    const pages = s3.requests('GET', 'uploads');
    expect(pages.map((p) => p.listed)).toEqual([1000, 200]);
    expect(pages[1]!.query.get('key-marker')).toBe('exports/runs/r3/part-00999');
  });
});
