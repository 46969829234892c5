import { describe, expect, it } from 'vitest';
import { ByteBatch } from '../../src/storage/byte-batch.ts';

describe('ByteBatch', () => {
  it('hands on every byte in order, in batches no larger than its capacity but for one large chunk', () => {
    const capacity = 4096;
    const batch = new ByteBatch(capacity);
    let random = 7;
    const next = () => {
      random = (random * 1103515245 + 12345) % 2 ** 31;
      return random;
    };
    const written: Buffer[] = [];
    const handed: Uint8Array[] = [];
    for (let i = 0; i < 2000; i++) {
      const size = next() % 7 === 0 ? next() % 9000 : next() % 300;
      const chunk = Buffer.from(Array.from({ length: size }, () => 97 + (next() % 26)));
      written.push(chunk);
      // Strings and bytes alike; a multi-byte character counts as its UTF-8 bytes.
      const ready = i % 2 === 0 ? batch.add(chunk.toString('latin1')) : batch.add(chunk);
      for (const bytes of ready) {
        expect(bytes.byteLength <= capacity || bytes.byteLength === size).toBe(true);
        handed.push(Buffer.from(bytes));
      }
    }
    const euro = '€';
    written.push(Buffer.from(euro));
    handed.push(...batch.add(euro).map((bytes) => Buffer.from(bytes)));
    const rest = batch.take();
    if (rest) handed.push(Buffer.from(rest));
    expect(batch.take()).toBeNull();
    expect(Buffer.concat(handed).equals(Buffer.concat(written))).toBe(true);
  });

  it('keeps a batch it handed on intact while it gathers the next', () => {
    const batch = new ByteBatch(8);
    expect(batch.add('abcdef')).toEqual([]);
    const [first] = batch.add('ghij');
    expect(Buffer.from(first as Uint8Array).toString()).toBe('abcdef');
    batch.add('zz');
    expect(Buffer.from(first as Uint8Array).toString()).toBe('abcdef');
    expect(Buffer.from(batch.take() as Uint8Array).toString()).toBe('ghijzz');
  });
});
