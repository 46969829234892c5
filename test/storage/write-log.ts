/**
 * A loopback HTTP proxy in front of s3rver that notes every object a client writes: PUT (an
 * object, an upload's part, a copy), POST of a multipart upload (started or completed), DELETE
 * (an object, an aborted upload) and the keys of a multi-object delete. Requests go through
 * unchanged, Host header included, so their signatures still hold. One proxy per client tells
 * the writers apart.
 */
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface WriteLog {
  endpoint: string;
  /** bucket/key of every write, in order. */
  writes: string[];
  close(): Promise<void>;
}

export async function startWriteLog(target: string): Promise<WriteLog> {
  const upstream = new URL(target);
  const writes: string[] = [];
  const server = createServer((incoming, outgoing) => {
    const chunks: Buffer[] = [];
    incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
    incoming.on('end', () => {
      const body = Buffer.concat(chunks);
      writes.push(...writtenKeys(incoming.method ?? 'GET', incoming.url ?? '/', body));
      const forwarded = request(
        {
          host: upstream.hostname,
          port: upstream.port,
          method: incoming.method,
          path: incoming.url,
          headers: incoming.headers,
        },
        (answer) => {
          outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(outgoing);
        },
      );
      forwarded.on('error', () => outgoing.destroy());
      forwarded.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    writes,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The keys a path-style request writes (none for a read). */
function writtenKeys(method: string, url: string, body: Buffer): string[] {
  const parsed = new URL(url, 'http://proxy');
  const key = decodeURIComponent(parsed.pathname.slice(1));
  if (method === 'PUT' || method === 'DELETE') return [key];
  if (method !== 'POST') return [];
  if (parsed.searchParams.has('delete')) {
    const bucket = key.replace(/\/$/, '');
    return [...body.toString('utf8').matchAll(/<Key>([^<]*)<\/Key>/g)].map(
      (match) => `${bucket}/${unescapeXml(match[1] ?? '')}`,
    );
  }
  return [key];
}

function unescapeXml(text: string): string {
  return text
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'")
    .replace(/&amp;/g, '&');
}
