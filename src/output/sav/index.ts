/** The SPSS system file codec: a measured dataset's rows, streamed into a .sav file's bytes. */
import type { LabelledDataset, LabelledValue, Measured } from '../labelled/dataset.ts';
import { SavEncoder } from './encoder.ts';

export { SavEncoder, spssTime } from './encoder.ts';

const CHUNK_BYTES = 1024 * 1024;

/** Writes the file: `rows` must be the rows `measured` measured, in the same order. */
export async function encodeSav(
  dataset: LabelledDataset,
  measured: Measured,
  rows: AsyncIterable<readonly LabelledValue[]> | Iterable<readonly LabelledValue[]>,
  write: (chunk: Buffer) => Promise<void>,
): Promise<void> {
  const encoder = new SavEncoder(dataset, measured);
  await write(encoder.dictionary());
  for await (const row of rows) {
    encoder.row(row);
    if (encoder.pendingBytes >= CHUNK_BYTES) await write(encoder.take());
  }
  const rest = encoder.take();
  if (rest.length > 0) await write(rest);
  await write(encoder.end());
}
