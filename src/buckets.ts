/**
 * A study's bucket: SHA-256 of its permanent id's UTF-8 bytes, the first 8 bytes read as an
 * unsigned big-endian integer, modulo BUCKETS. The same on every machine and Node version, and
 * fixed for the study's life (permanent ids never change). current/ keeps the rows of all the
 * studies of a bucket in one part per table (current/parts.ts), so that a study of two responses
 * does not cost the files of a large one; shards own whole buckets (src/shard.ts), so no
 * two shards ever write the same part.
 */
import { createHash } from 'node:crypto';

/** Buckets of current/: enough that a large study rarely shares one, few enough that a table stays a few dozen files. */
export const BUCKETS = 64;

export function bucketOf(studyId: string): number {
  const digest = createHash('sha256').update(studyId, 'utf8').digest();
  return Number(digest.readBigUInt64BE(0) % BigInt(BUCKETS));
}
