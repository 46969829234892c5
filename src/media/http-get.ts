/**
 * One GET to a media host over node:http(s). Media requests are plain: no retries here (the
 * shared loop of src/http/retry.ts runs around them), no decompression, the raw body as a
 * stream. node:http rather than got: on files of a few MB, got's per-request option
 * handling and its stream layers cost more CPU than receiving the body.
 *
 * Nothing of the API client's reaches a media host: the only header sent is the user
 * agent; redirects (at most five, http and https only) carry no credentials, since none is
 * ever set, and user info in a Location is dropped.
 */
import http, { type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import https from 'node:https';

const agents: Record<string, http.Agent> = {
  'http:': new http.Agent({ keepAlive: true }),
  'https:': new https.Agent({ keepAlive: true }),
};

const maxRedirects = 5;
const redirectStatuses = new Set([301, 302, 303, 307, 308]);

/** No byte for `timeoutMs` (connect, first byte, or mid-body), or the deadline passed. */
export class MediaTimeoutError extends Error {
  readonly code = 'ETIMEDOUT';

  constructor(
    readonly event: 'idle' | 'deadline',
    message: string,
  ) {
    super(message);
  }
}

export interface MediaGetOptions {
  /** Longest wait for a connection, the first byte or the next chunk. */
  timeoutMs: number;
  /** The whole request, redirects and body included. */
  deadlineMs: number;
}

export interface MediaResponse {
  status: number;
  headers: IncomingHttpHeaders;
  /** The body; it ends, or fails with the network error, a timeout or the deadline. */
  body: IncomingMessage;
  /** Stops the request and frees its socket. */
  abort(): void;
}

/** GET `url`, following redirects; resolves once the final response's headers are in. */
export function mediaGet(url: string, options: MediaGetOptions): Promise<MediaResponse> {
  const first = new URL(url);
  let current: { request: http.ClientRequest; response?: IncomingMessage } | null = null;
  const stop = (error?: Error) => {
    clearTimeout(deadline);
    if (!current) return;
    current.response?.destroy(error);
    current.request.destroy(error);
  };
  const deadline = setTimeout(
    () => stop(new MediaTimeoutError('deadline', `not complete within ${options.deadlineMs} ms`)),
    options.deadlineMs,
  );
  // The request keeps the process alive while it runs; the deadline alone must not.
  deadline.unref();
  const follow = (target: URL, redirects: number): Promise<MediaResponse> =>
    new Promise((resolve, reject) => {
      const agent = agents[target.protocol];
      if (!agent) {
        reject(new Error(`unsupported protocol ${target.protocol}`));
        return;
      }
      target.username = '';
      target.password = '';
      const request = (target.protocol === 'https:' ? https : http).get(target, {
        agent,
        headers: { 'user-agent': 'study-export media' },
      });
      current = { request };
      request.setTimeout(options.timeoutMs, () =>
        stop(new MediaTimeoutError('idle', `no data for ${options.timeoutMs} ms`)),
      );
      request.on('error', (error) => {
        clearTimeout(deadline);
        reject(error);
      });
      request.once('response', (response) => {
        if (current) current.response = response;
        const status = response.statusCode ?? 0;
        const location = response.headers.location;
        if (redirectStatuses.has(status) && location !== undefined) {
          response.resume();
          if (redirects >= maxRedirects) {
            stop();
            reject(new Error(`more than ${maxRedirects} redirects`));
            return;
          }
          follow(new URL(location, target), redirects + 1).then(resolve, reject);
          return;
        }
        response.once('close', () => clearTimeout(deadline));
        resolve({ status, headers: response.headers, body: response, abort: () => stop() });
      });
    });
  return follow(first, 0);
}
