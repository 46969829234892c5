/** Sharding: the stable hash, the K/N syntax, and where the shard comes from on a command line. */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { shardOf } from '../../src/cli/shard.ts';
import { inShard, parseShard, shardLabel, shardOfStudy } from '../../src/shard.ts';

/** The same rule computed another way: the digest's first 16 hex digits as one BigInt, its bucket, modulo N. */
function expectedShard(id: string, count: number): number {
  const hex = createHash('sha256').update(Buffer.from(id, 'utf8')).digest('hex');
  return Number((BigInt(`0x${hex.slice(0, 16)}`) % 64n) % BigInt(count)) + 1;
}

const ids = Array.from({ length: 3000 }, (_, i) => `${i.toString(16).padStart(8, '0')}-4b1d-9c7e-study-${i}`);

describe('shardOfStudy', () => {
  it('is the bucket (SHA-256 of the id, first 8 bytes big-endian, modulo 64) modulo N, 1-based', () => {
    for (const id of [...ids.slice(0, 200), 'é-研究', '']) {
      for (const count of [1, 2, 3, 7, 64]) expect(shardOfStudy(id, count)).toBe(expectedShard(id, count));
    }
    // Pinned, so a change of rule cannot pass unnoticed: sha256("abc") (FIPS 180-2's test vector) starts ba7816bf8f01cfea.
    expect((BigInt('0xba7816bf8f01cfea') % 64n) % 3n).toBe(0n);
    expect(shardOfStudy('abc', 3)).toBe(1);
  });

  it('puts every study in exactly one shard, spread evenly', () => {
    const count = 3;
    const sizes = [0, 0, 0];
    for (const id of ids) {
      const owners = [1, 2, 3].filter((index) => inShard(id, { index, count }));
      expect(owners).toHaveLength(1);
      sizes[owners[0]! - 1]! += 1;
    }
    for (const size of sizes) expect(size).toBeGreaterThan(ids.length / count - 150);
    expect(inShard('anything', undefined)).toBe(true);
  });
});

describe('parseShard', () => {
  it('reads K/N, 1-based', () => {
    expect(parseShard('2/3')).toEqual({ index: 2, count: 3 });
    expect(parseShard(' 1 / 1 ')).toEqual({ index: 1, count: 1 });
    expect(shardLabel({ index: 2, count: 3 })).toBe('shard-2-of-3');
  });

  it('names what was wrong', () => {
    expect(() => parseShard('0/3')).toThrow('--shard: shard numbers run from 1 to 3 (1-based), found "0/3"');
    expect(() => parseShard('4/3')).toThrow(/from 1 to 3/);
    expect(() => parseShard('1/0')).toThrow(/number of shards must be from 1/);
    expect(() => parseShard('two of three')).toThrow('--shard: expected K/N, e.g. 2/3');
    expect(() => parseShard('1.5/3')).toThrow(/expected K\/N/);
  });
});

describe('the shard of a run (command line and environment)', () => {
  it('--shard wins, then STUDY_EXPORT_SHARD, then JOB_COMPLETION_INDEX (0-based) with a count', () => {
    const env = { STUDY_EXPORT_SHARD: '3/4', JOB_COMPLETION_INDEX: '0', STUDY_EXPORT_SHARD_COUNT: '2' };
    expect(shardOf({ shard: '1/2' }, env)).toEqual({ index: 1, count: 2 });
    expect(shardOf({}, env)).toEqual({ index: 3, count: 4 });
    expect(shardOf({}, { JOB_COMPLETION_INDEX: '2', STUDY_EXPORT_SHARD_COUNT: '3' })).toEqual({
      index: 3,
      count: 3,
    });
    expect(
      shardOf({ 'shard-count': 5 }, { JOB_COMPLETION_INDEX: '0', STUDY_EXPORT_SHARD_COUNT: '3' }),
    ).toEqual({
      index: 1,
      count: 5,
    });
    expect(shardOf({}, {})).toBeUndefined();
    expect(shardOf({}, { STUDY_EXPORT_SHARD: '' })).toBeUndefined();
  });

  it('refuses to guess: an index without a count, a count without an index, an index out of range', () => {
    expect(() => shardOf({}, { JOB_COMPLETION_INDEX: '1' })).toThrow(
      /JOB_COMPLETION_INDEX=1 is set .* set --shard-count N or STUDY_EXPORT_SHARD_COUNT=N/,
    );
    expect(() => shardOf({}, { STUDY_EXPORT_SHARD_COUNT: '3' })).toThrow(
      /a shard count \(3\) is set but no shard/,
    );
    expect(() => shardOf({}, { JOB_COMPLETION_INDEX: '3', STUDY_EXPORT_SHARD_COUNT: '3' })).toThrow(
      /JOB_COMPLETION_INDEX \(0-based\) of 3: shard numbers run from 1 to 3/,
    );
    expect(() => shardOf({}, { JOB_COMPLETION_INDEX: '-1', STUDY_EXPORT_SHARD_COUNT: '3' })).toThrow(
      /expected a 0-based pod index, found "-1"/,
    );
    expect(() => shardOf({}, { STUDY_EXPORT_SHARD: '2' })).toThrow(/STUDY_EXPORT_SHARD: expected K\/N/);
  });
});
