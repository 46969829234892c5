/** The SPSS system file codec: a measured dataset's rows, streamed into a .sav file's bytes. */
import type { LabelledDataset, LabelledValue, Measured } from '../labelled/dataset.ts';
import { SavEncoder } from './encoder.ts';

export { SavEncoder, spssTime } from './encoder.ts';

const CHUNK_BYTES = 1024 * 1024;

/**
 * Writes the file: `rows` must be the rows `measured` measured, in the same order. `write` may
 * keep a chunk only until it resolves (the storage's OutputFile.write does).
 */
export async function encodeSav(
  dataset: LabelledDataset,
  measured: Measured,
  rows: AsyncIterable<readonly LabelledValue[]> | Iterable<readonly LabelledValue[]>,
  write: (chunk: Buffer) => Promise<void>,
): Promise<void> {
  const encoder = new SavEncoder(dataset, measured);
  await write(encoder.dictionary());
  // One buffer is filled and written over and over, so a large file makes no garbage.
  for await (const row of rows) {
    encoder.row(row);
    if (encoder.pendingBytes >= CHUNK_BYTES) {
      await write(encoder.pending());
      encoder.clear();
    }
  }
  await write(encoder.end());
}
