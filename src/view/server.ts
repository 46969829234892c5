/**
 * `study-export view`'s web server: read-only, on loopback. Routes name things by their ids
 * and every id is looked up in the tables (a study, a response, a media row); a recording's
 * zip entry is the one its media row names, and an HLS segment must be one its archived
 * playlist lists. No part of a URL is ever used as a path, so nothing outside the run can be
 * reached. Recordings are served out of media.zip by byte range (206 for seeking), from a
 * folder or a bucket alike; every page carries a Content-Security-Policy without inline
 * script, and a Host check keeps other sites' pages (DNS rebinding) away from it.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ConfigError } from '../errors.ts';
import { REPORT_FILE } from '../output/layout.ts';
import { playlistUris, type ZipEntry, type ZipIndex } from '../reader/index.ts';
import type { Row } from '../tables/index.ts';
import { viewerCss, viewerJs } from './assets.ts';
import { conversationPage } from './conversation.ts';
import type { ViewData } from './dataset.ts';
import { responsesPage, searchPage, studiesPage } from './pages.ts';
import { csvFileName, responsesCsv } from './responses-csv.ts';
import { filterOf, selectResponses } from './search.ts';

export interface ViewRequest {
  method: string;
  path: string;
  range: string | null;
  status: number;
}

export interface ViewServerOptions {
  host?: string;
  /** 0 (default): a free port. */
  port?: number;
  /** Each request once answered (tests, --verbose logs). */
  onRequest?: (request: ViewRequest) => void;
  onError?: (error: unknown) => void;
}

export interface ViewServer {
  url: string;
  close(): Promise<void>;
}

const pageCsp =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; media-src 'self'; " +
  "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";
/** report.html keeps its inline styles; it has no script at all. */
const reportCsp =
  "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; frame-ancestors 'none'";
/** Bytes from the service are never run as a page, whatever they hold. */
const mediaCsp = "default-src 'none'; sandbox";

/** Content types by extension: never the one the media host sent, which is not ours to trust. */
const mediaTypes: Record<string, string> = {
  mp3: 'audio/mpeg',
  m4a: 'audio/mp4',
  wav: 'audio/wav',
  ogg: 'audio/ogg',
  webm: 'video/webm',
  mp4: 'video/mp4',
  ts: 'video/mp2t',
  m3u8: 'application/vnd.apple.mpegurl',
};

class HttpProblem extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export async function startViewServer(data: ViewData, options: ViewServerOptions = {}): Promise<ViewServer> {
  const host = options.host ?? '127.0.0.1';
  let origin = '';
  let allowedHosts = new Set<string>();
  const server = createServer((request, response) => {
    handle(data, request, response, origin, allowedHosts).then(
      () => report(),
      (error: unknown) => {
        const problem = error instanceof HttpProblem ? error : null;
        if (!problem) options.onError?.(error);
        if (!response.headersSent) {
          const status = problem?.status ?? 500;
          const text = problem?.message ?? 'the viewer could not read this from the run';
          response.writeHead(status, {
            'content-type': 'text/plain; charset=utf-8',
            'content-security-policy': mediaCsp,
            'x-content-type-options': 'nosniff',
          });
          response.end(`${status}: ${text}\n`);
        } else response.destroy();
        report();
      },
    );
    function report() {
      options.onRequest?.({
        method: request.method ?? '',
        path: request.url ?? '',
        range: request.headers.range ?? null,
        status: response.statusCode,
      });
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) =>
      reject(
        error.code === 'EADDRINUSE'
          ? new ConfigError(
              `--port ${options.port}: the port is in use; choose another, or leave --port out for a free one`,
            )
          : error,
      ),
    );
    server.listen(options.port ?? 0, host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const hostName = host.includes(':') ? `[${host}]` : host;
  origin = `http://${hostName}:${port}`;
  allowedHosts = new Set([`${hostName}:${port}`, `localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`]);
  return {
    url: `${origin}/`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function segmentsOf(pathname: string): string[] {
  if (!pathname.startsWith('/')) throw new HttpProblem(400, 'the address is not valid');
  try {
    return pathname.split('/').slice(1).map(decodeURIComponent);
  } catch {
    throw new HttpProblem(400, 'the address is not valid');
  }
}

async function handle(
  data: ViewData,
  request: IncomingMessage,
  response: ServerResponse,
  origin: string,
  allowedHosts: ReadonlySet<string>,
): Promise<void> {
  if (request.method !== 'GET' && request.method !== 'HEAD') {
    response.setHeader('allow', 'GET, HEAD');
    throw new HttpProblem(405, 'the viewer is read-only');
  }
  if (!allowedHosts.has((request.headers.host ?? '').toLowerCase()))
    throw new HttpProblem(400, 'this viewer answers only to its own address');
  // The path as sent: WHATWG URL parsing would resolve "%2e%2e" into a step up first.
  const target = request.url ?? '/';
  const queryAt = target.indexOf('?');
  const parts = segmentsOf(queryAt < 0 ? target : target.slice(0, queryAt));
  const query = new URLSearchParams(queryAt < 0 ? '' : target.slice(queryAt + 1));
  const [first, second, third, fourth, fifth] = parts;
  const at = (n: number) => parts.length === n;
  if (at(1) && first === '') return sendPage(request, response, studiesPage(data));
  if (at(2) && first === 'assets' && second === 'viewer.css')
    return sendAsset(request, response, viewerCss, 'text/css');
  if (at(2) && first === 'assets' && second === 'viewer.js')
    return sendAsset(request, response, viewerJs, 'text/javascript');
  if (at(1) && first === 'report' && data.hasReport) return sendReport(data, request, response);
  if (at(2) && first === 'study') {
    const study = data.studies.find((s) => s.study_id === second);
    if (!study) throw new HttpProblem(404, 'no such study in this run');
    return sendPage(
      request,
      response,
      responsesPage(data, study, { ...filterOf(query), study: study.study_id }),
    );
  }
  if (at(1) && (first === 'search' || first === 'responses.csv')) {
    const filter = filterOf(query);
    if (filter.study && !data.studies.some((s) => s.study_id === filter.study))
      throw new HttpProblem(404, 'no such study in this run');
    if (first === 'search') return sendPage(request, response, searchPage(data, filter));
    return sendCsv(
      request,
      response,
      csvFileName(data, filter),
      responsesCsv(data, selectResponses(data, filter), filter),
    );
  }
  if (at(2) && first === 'response') {
    const found = data.responses.get(second ?? '');
    if (!found) throw new HttpProblem(404, 'no such response in this run');
    return sendPage(request, response, await conversationPage(data, found, origin, filterOf(query)));
  }
  if (first === 'media' && second !== undefined && third !== undefined && fourth !== undefined) {
    if (at(4) && fourth !== 'hls') return sendMedia(data, request, response, second, third, fourth, null);
    if (at(5) && fourth === 'hls' && fifth !== undefined)
      return sendMedia(data, request, response, second, third, 'hls', fifth);
  }
  throw new HttpProblem(404, 'nothing here');
}

function securityHeaders(csp: string): Record<string, string> {
  return {
    'content-security-policy': csp,
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'cross-origin-resource-policy': 'same-origin',
  };
}

function sendPage(request: IncomingMessage, response: ServerResponse, html: string): void {
  response.writeHead(200, {
    'content-type': 'text/html; charset=utf-8',
    'cache-control': 'no-store',
    ...securityHeaders(pageCsp),
  });
  response.end(request.method === 'HEAD' ? undefined : html);
}

function sendAsset(request: IncomingMessage, response: ServerResponse, text: string, type: string): void {
  response.writeHead(200, { 'content-type': `${type}; charset=utf-8`, ...securityHeaders(pageCsp) });
  response.end(request.method === 'HEAD' ? undefined : text);
}

/** A download: the file name is ours (csvFileName), never text from the data. */
async function sendCsv(
  request: IncomingMessage,
  response: ServerResponse,
  name: string,
  pieces: Iterable<string>,
): Promise<void> {
  response.writeHead(200, {
    'content-type': 'text/csv; charset=utf-8',
    'content-disposition': `attachment; filename="${name}"`,
    'cache-control': 'no-store',
    ...securityHeaders(mediaCsp),
  });
  if (request.method === 'HEAD') return void response.end();
  await pipeline(Readable.from(pieces), response);
}

async function sendReport(data: ViewData, request: IncomingMessage, response: ServerResponse): Promise<void> {
  const html = await data.storage.read(REPORT_FILE);
  if (!html) throw new HttpProblem(404, 'this run has no report.html');
  response.writeHead(200, { 'content-type': 'text/html; charset=utf-8', ...securityHeaders(reportCsp) });
  response.end(request.method === 'HEAD' ? undefined : html);
}

async function sendMedia(
  data: ViewData,
  request: IncomingMessage,
  response: ServerResponse,
  responseId: string,
  turnText: string,
  kind: string,
  segment: string | null,
): Promise<void> {
  const turn = /^[1-9]\d{0,8}$/.test(turnText) ? Number(turnText) : Number.NaN;
  const row: Row<'media'> | undefined = data.media
    .get(responseId)
    ?.find((m) => m.turn === turn && m.kind === kind);
  if (!row) throw new HttpProblem(404, 'no such recording in this run');
  const located = await data.locate(row);
  if ('reason' in located) throw new HttpProblem(404, located.reason);
  const { zip } = located;
  let entry = located.entry;
  if (segment !== null && segment !== 'index.m3u8') {
    // Only a segment the archived playlist lists, in the playlist's own folder.
    const listed = playlistUris((await zip.readAll(entry)).toString('utf8'));
    if (!listed.includes(segment)) throw new HttpProblem(404, 'the playlist lists no such segment');
    const folder = entry.name.slice(0, entry.name.lastIndexOf('/'));
    const found = zip.entries.get(`${folder}/${segment}`);
    if (!found) throw new HttpProblem(404, 'the segment is not in media.zip');
    entry = found;
  }
  if (entry.method !== 0)
    throw new HttpProblem(415, 'the zip entry is compressed; only stored entries are served');
  await sendEntry(request, response, zip, entry);
}

/** One entry's bytes, whole (200) or the range asked for (206), or 416 for a range beyond it. */
async function sendEntry(request: IncomingMessage, response: ServerResponse, zip: ZipIndex, entry: ZipEntry) {
  const size = entry.size;
  const extension = entry.name.slice(entry.name.lastIndexOf('.') + 1).toLowerCase();
  const headers: Record<string, string> = {
    'content-type': mediaTypes[extension] ?? 'application/octet-stream',
    'accept-ranges': 'bytes',
    'cache-control': 'no-cache',
    ...securityHeaders(mediaCsp),
  };
  const range = parseRange(request.headers.range, size);
  if (range === 'unsatisfiable') {
    response.writeHead(416, { ...headers, 'content-range': `bytes */${size}` });
    response.end();
    return;
  }
  const { start, end } = range ?? { start: 0, end: size - 1 };
  response.writeHead(range ? 206 : 200, {
    ...headers,
    'content-length': String(Math.max(0, end - start + 1)),
    ...(range ? { 'content-range': `bytes ${start}-${end}/${size}` } : {}),
  });
  if (request.method === 'HEAD' || size === 0) {
    response.end();
    return;
  }
  await pipeline(await zip.read(entry, start, end + 1), response);
}

/** One "bytes=" range (inclusive end); null for none or one this server ignores (several). */
export function parseRange(
  header: string | undefined,
  size: number,
): { start: number; end: number } | 'unsatisfiable' | null {
  if (!header) return null;
  const match = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!match) return header.includes(',') ? null : 'unsatisfiable';
  const [, from, to] = match;
  if (from === '' && to === '') return 'unsatisfiable';
  if (from === '') {
    const length = Number(to);
    if (length === 0) return 'unsatisfiable';
    return { start: Math.max(0, size - length), end: size - 1 };
  }
  const start = Number(from);
  const end = to === '' ? size - 1 : Math.min(Number(to), size - 1);
  if (start >= size || end < start) return 'unsatisfiable';
  return { start, end };
}
