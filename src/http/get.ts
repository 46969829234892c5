/**
 * One GET over node:http(s), for the API client and the media downloads alike. No retries
 * here (the shared loop of src/http/retry.ts runs around it), no decompression (the caller
 * decides), the body as a stream. node:http rather than a client library: every byte the
 * run fetches passes here, and per-request option handling would be paid a hundred
 * thousand times a large run (bench/README.md has the profile).
 *
 * Only the headers the caller passes are sent, and only to hosts the caller's redirect rule
 * accepts: a redirect it refuses comes back as the 3xx answer itself. User info in a URL or a
 * Location is dropped.
 */
import http, { type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import https from 'node:https';

export interface Agents {
  http: http.Agent;
  https: https.Agent;
}

/** Kept-alive connections for callers that bring none of their own. */
const sharedAgents: Agents = {
  http: new http.Agent({ keepAlive: true }),
  https: new https.Agent({ keepAlive: true }),
};

const maxRedirects = 5;
const redirectStatuses = new Set([301, 302, 303, 307, 308]);

/** No byte for `timeoutMs` (connect, first byte, or mid-body), or the deadline passed. */
export class RequestTimeoutError extends Error {
  readonly code = 'ETIMEDOUT';

  constructor(
    readonly event: 'idle' | 'deadline',
    message: string,
  ) {
    super(message);
  }
}

export interface GetOptions {
  /** Longest wait for a connection, the first byte or the next chunk. */
  timeoutMs: number;
  /** The whole request, redirects and body included. */
  deadlineMs: number;
  headers: Record<string, string>;
  /** Whether to follow a redirect from `from` to `to`; refused ones are answered as they came. */
  followRedirect: (from: URL, to: URL) => boolean;
  agents?: Agents;
  /** The first request's path and query as written, where `url` cannot hold them (a "." segment). */
  path?: string;
}

export interface GetResponse {
  status: number;
  headers: IncomingHttpHeaders;
  /** The URL that answered (after redirects). */
  url: URL;
  /** The body; it ends, or fails with the network error, a timeout or the deadline. */
  body: IncomingMessage;
  /** Stops the request and frees its socket. */
  abort(): void;
}

/** GET `url`, following accepted redirects; resolves once the final answer's headers are in. */
export function httpGet(url: string | URL, options: GetOptions): Promise<GetResponse> {
  const agents = options.agents ?? sharedAgents;
  let current: { request: http.ClientRequest; response?: IncomingMessage } | null = null;
  const stop = (error?: Error) => {
    clearTimeout(deadline);
    if (!current) return;
    current.response?.destroy(error);
    current.request.destroy(error);
  };
  const deadline = setTimeout(
    () => stop(new RequestTimeoutError('deadline', `not complete within ${options.deadlineMs} ms`)),
    options.deadlineMs,
  );
  // The request keeps the process alive while it runs; the deadline alone must not.
  deadline.unref();
  const follow = (target: URL, redirects: number): Promise<GetResponse> =>
    new Promise((resolve, reject) => {
      if (target.protocol !== 'http:' && target.protocol !== 'https:') {
        clearTimeout(deadline);
        reject(new Error(`unsupported protocol ${target.protocol}`));
        return;
      }
      target.username = '';
      target.password = '';
      const secure = target.protocol === 'https:';
      const request = (secure ? https : http).get(target, {
        agent: secure ? agents.https : agents.http,
        headers: options.headers,
        ...(redirects === 0 && options.path !== undefined ? { path: options.path } : {}),
      });
      current = { request };
      request.setTimeout(options.timeoutMs, () =>
        stop(new RequestTimeoutError('idle', `no data for ${options.timeoutMs} ms`)),
      );
      request.on('error', (error) => {
        clearTimeout(deadline);
        reject(error);
      });
      request.once('response', (response) => {
        if (current) current.response = response;
        const status = response.statusCode ?? 0;
        const location = response.headers.location;
        const next = redirectStatuses.has(status) ? redirectTarget(location, target) : null;
        if (next && options.followRedirect(target, next)) {
          response.resume();
          if (redirects >= maxRedirects) {
            stop();
            reject(new Error(`more than ${maxRedirects} redirects`));
            return;
          }
          follow(next, redirects + 1).then(resolve, reject);
          return;
        }
        response.once('close', () => clearTimeout(deadline));
        resolve({ status, headers: response.headers, url: target, body: response, abort: () => stop() });
      });
    });
  return follow(new URL(url), 0);
}

function redirectTarget(location: string | undefined, from: URL): URL | null {
  if (location === undefined) return null;
  try {
    return new URL(location, from);
  } catch {
    return null;
  }
}
