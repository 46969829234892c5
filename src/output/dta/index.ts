/** The Stata dta codec: a measured dataset's rows, streamed into a .dta file's bytes. */
import type { LabelledDataset, LabelledValue, Measured } from '../labelled/dataset.ts';
import { DtaEncoder } from './encoder.ts';

export { DtaEncoder, stataTime } from './encoder.ts';

/**
 * Where the strLs wait while the data section is written (they follow it in the file): the
 * caller's choice, a scratch file for a study of any size.
 */
export interface StrlStore {
  write(chunk: Buffer): Promise<void>;
  /** Everything written, in order, once writing is over. */
  read(): AsyncIterable<Buffer>;
}

const CHUNK_BYTES = 1024 * 1024;

/**
 * Writes the file: `rows` must be the rows `measured` measured, in the same order. `write` and
 * `strls.write` may keep a chunk only until they resolve (the storage's OutputFile.write does).
 */
export async function encodeDta(
  dataset: LabelledDataset,
  measured: Measured,
  rows: AsyncIterable<readonly LabelledValue[]> | Iterable<readonly LabelledValue[]>,
  write: (chunk: Buffer) => Promise<void>,
  strls: StrlStore,
): Promise<void> {
  const encoder = new DtaEncoder(dataset, measured);
  await write(encoder.head());
  // Two buffers are filled and written over and over, so a large file makes no garbage.
  const flush = async (part: typeof encoder.data, to: (chunk: Buffer) => Promise<void>, at: number) => {
    if (part.pending().length < at) return;
    await to(part.pending());
    part.clear();
  };
  for await (const row of rows) {
    encoder.row(row);
    await flush(encoder.data, write, CHUNK_BYTES);
    await flush(encoder.strls, (chunk) => strls.write(chunk), CHUNK_BYTES);
  }
  await flush(encoder.data, write, 1);
  await flush(encoder.strls, (chunk) => strls.write(chunk), 1);
  await write(encoder.afterData());
  for await (const chunk of strls.read()) {
    encoder.countStrls(chunk.length);
    await write(chunk);
  }
  await write(encoder.end());
}
