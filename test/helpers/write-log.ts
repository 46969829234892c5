/**
 * A loopback HTTP proxy in front of s3rver that notes every object a client writes: PUT (an
 * object, an upload's part, a copy), POST of a multipart upload (started or completed), DELETE
 * (an object, an aborted upload) and the keys of a multi-object delete. Requests go through
 * unchanged, Host header included, so their signatures still hold. One proxy per client tells
 * the writers apart.
 */
import { bodyOf, startProxy } from './proxy.ts';
import { deletedKeys } from './s3.ts';

export interface WriteLog {
  endpoint: string;
  /** bucket/key of every write, in order. */
  writes: string[];
  close(): Promise<void>;
}

export async function startWriteLog(target: string): Promise<WriteLog> {
  const writes: string[] = [];
  const proxy = await startProxy(target, ({ incoming, outgoing, forward }) => {
    bodyOf(incoming).then(
      (body) => {
        writes.push(...writtenKeys(incoming.method ?? 'GET', incoming.url ?? '/', body));
        forward({ body, keepHost: true });
      },
      () => outgoing.destroy(),
    );
  });
  return { endpoint: proxy.url, writes, close: proxy.close };
}

/** The keys a path-style request writes (none for a read). */
function writtenKeys(method: string, url: string, body: Buffer): string[] {
  const parsed = new URL(url, 'http://proxy');
  const key = decodeURIComponent(parsed.pathname.slice(1));
  if (method === 'PUT' || method === 'DELETE') return [key];
  if (method !== 'POST') return [];
  if (parsed.searchParams.has('delete')) {
    const bucket = key.replace(/\/$/, '');
    return deletedKeys(body.toString('utf8')).map((deleted) => `${bucket}/${deleted}`);
  }
  return [key];
}
