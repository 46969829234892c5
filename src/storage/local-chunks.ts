/**
 * A local file's bytes read into two buffers in turn, the next read under way while the
 * caller uses the last: a large copy (erase's media.zip) allocates no buffer per chunk, whose
 * fresh pages would cost more than the copy.
 */
import { open } from 'node:fs/promises';
import type { ByteRange } from './types.ts';

export async function* localChunks(
  absolutePath: string,
  range: ByteRange,
  chunkBytes: number,
): AsyncIterable<Uint8Array> {
  if (range.end <= range.start) return;
  const file = await open(absolutePath, 'r');
  try {
    const size = Math.min(chunkBytes, range.end - range.start);
    const buffers: [Buffer, Buffer] = [Buffer.allocUnsafe(size), Buffer.allocUnsafe(size)];
    let turn: 0 | 1 = 0;
    let position = range.start;
    const readNext = () => file.read(buffers[turn], 0, Math.min(size, range.end - position), position);
    let reading = readNext();
    for (;;) {
      const { bytesRead } = await reading;
      // A file shorter than the range: what is there, as a stream would give it.
      if (bytesRead === 0) return;
      const chunk = buffers[turn].subarray(0, bytesRead);
      position += bytesRead;
      if (position >= range.end) {
        yield chunk;
        return;
      }
      turn = turn === 0 ? 1 : 0;
      reading = readNext();
      yield chunk;
    }
  } finally {
    await file.close();
  }
}
