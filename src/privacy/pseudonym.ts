/**
 * Keyed pseudonyms: HMAC-SHA-256 of what an id or value is, under the profile's secret. The same
 * id gets the same pseudonym in every package and every run; without the secret nobody can
 * reverse one, or confirm a guess by hashing it.
 */
import { createHmac } from 'node:crypto';

/** What a pseudonym stands for; each kind hashes apart, so a value never collides across kinds. */
export type PseudonymSubject =
  | { kind: 'response'; id: string }
  | { kind: 'answer'; response_id: string; id: string }
  | { kind: 'attribute'; key: string; value: string };

const prefixes = { response: 'resp-', answer: 'ans-', attribute: 'attr-' } as const;

/** RFC 4648 base32 in lower case: letters and digits only, safe as a name on any disk. */
const alphabet = 'abcdefghijklmnopqrstuvwxyz234567';

/** 80 bits of the HMAC as 16 base32 letters: collisions are out of reach for any study. */
export function pseudonymOf(secret: Buffer, subject: PseudonymSubject): string {
  const parts =
    subject.kind === 'response'
      ? [subject.kind, subject.id]
      : subject.kind === 'answer'
        ? [subject.kind, subject.response_id, subject.id]
        : [subject.kind, subject.key, subject.value];
  return prefixes[subject.kind] + base32(keyedDigest(secret, parts).subarray(0, 10));
}

/** HMAC-SHA-256 of the parts, joined by NUL (which no part holds apart from in its own text). */
export function keyedDigest(secret: Buffer, parts: readonly string[]): Buffer {
  const hmac = createHmac('sha256', secret);
  for (const part of parts) {
    const bytes = Buffer.from(part, 'utf8');
    // Each part's length first: ("a\0b", "c") and ("a", "b\0c") hash apart.
    hmac.update(`${bytes.length}:`);
    hmac.update(bytes);
  }
  return hmac.digest();
}

function base32(bytes: Buffer): string {
  let bits = 0;
  let value = 0;
  let out = '';
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += alphabet[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
    value &= (1 << bits) - 1;
  }
  if (bits > 0) out += alphabet[(value << (5 - bits)) & 31];
  return out;
}
