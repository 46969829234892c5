import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { BodyTooLarge, collectBody } from '../../src/api/client.ts';

const chunks = ['[{"a":', '1},', '{"b":"ü"}', ']'].map((text) => Buffer.from(text));
const whole = Buffer.concat(chunks);

describe('collectBody', () => {
  it('gives the bytes as sent, whatever the declared length says', async () => {
    for (const declared of [whole.length, null, 0, 3, whole.length - 1, whole.length + 5]) {
      const body = await collectBody(Readable.from(chunks), declared, 1024);
      expect(body.equals(whole), `declared ${declared}`).toBe(true);
    }
  });

  it('stops at the cap, declared length or not', async () => {
    for (const declared of [whole.length, null]) {
      await expect(collectBody(Readable.from(chunks), declared, whole.length - 1)).rejects.toThrow(
        BodyTooLarge,
      );
    }
    expect((await collectBody(Readable.from(chunks), whole.length, whole.length)).length).toBe(whole.length);
  });

  it('gives an empty body for no bytes', async () => {
    expect((await collectBody(Readable.from([]), 0, 10)).length).toBe(0);
    expect((await collectBody(Readable.from([]), null, 10)).length).toBe(0);
  });
});
