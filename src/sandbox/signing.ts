/**
 * Signed media URLs: `<path>?expires=<epoch seconds>&sig=<hex HMAC-SHA256(secret, path + "\n" + expires)>`.
 * The path is signed exactly as it appears on the wire (percent-encoded), so any change to
 * it, to expires or to sig makes the URL answer 403.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Clock } from './clock.ts';

/** How long a signed URL stays valid (spec section 8). */
export const SIGNED_URL_TTL_MS = 60 * 60 * 1000;

export type Verdict = 'valid' | 'expired' | 'invalid';

export class UrlSigner {
  private readonly secret: Buffer = randomBytes(32);

  constructor(private readonly clock: Clock) {}

  /** The query string (without "?") that signs `path` for one hour from now. */
  query(path: string): string {
    const expires = Math.floor((this.clock.now() + SIGNED_URL_TTL_MS) / 1000);
    return `expires=${expires}&sig=${this.signature(path, String(expires))}`;
  }

  /** A full signed URL on `origin`. */
  url(origin: string, path: string): string {
    return `${origin}${path}?${this.query(path)}`;
  }

  /** Checks a request target (raw path plus query string). */
  verify(target: string): Verdict {
    const [path = '', search = ''] = splitTarget(target);
    const params = new URLSearchParams(search);
    const expires = params.get('expires');
    const sig = params.get('sig');
    if (!expires || !sig || !/^\d+$/.test(expires) || !/^[0-9a-f]{64}$/.test(sig)) return 'invalid';
    const expected = Buffer.from(this.signature(path, expires), 'hex');
    if (!timingSafeEqual(expected, Buffer.from(sig, 'hex'))) return 'invalid';
    return Number(expires) * 1000 > this.clock.now() ? 'valid' : 'expired';
  }

  private signature(path: string, expires: string): string {
    return createHmac('sha256', this.secret).update(`${path}\n${expires}`).digest('hex');
  }
}

/** Splits a request target into its raw path and its query string (without "?"). */
export function splitTarget(target: string): [string, string] {
  const at = target.indexOf('?');
  return at < 0 ? [target, ''] : [target.slice(0, at), target.slice(at + 1)];
}
