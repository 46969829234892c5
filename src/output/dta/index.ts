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

/** Writes the file: `rows` must be the rows `measured` measured, in the same order. */
export async function encodeDta(
  dataset: LabelledDataset,
  measured: Measured,
  rows: AsyncIterable<readonly LabelledValue[]> | Iterable<readonly LabelledValue[]>,
  write: (chunk: Buffer) => Promise<void>,
  strls: StrlStore,
): Promise<void> {
  const encoder = new DtaEncoder(dataset, measured);
  await write(encoder.head());
  let data: Buffer[] = [];
  let dataBytes = 0;
  let waiting: Buffer[] = [];
  let waitingBytes = 0;
  for await (const row of rows) {
    const encoded = encoder.row(row);
    data.push(encoded.data);
    dataBytes += encoded.data.length;
    if (encoded.strls) {
      waiting.push(encoded.strls);
      waitingBytes += encoded.strls.length;
    }
    if (dataBytes >= CHUNK_BYTES) {
      await write(Buffer.concat(data));
      data = [];
      dataBytes = 0;
    }
    if (waitingBytes >= CHUNK_BYTES) {
      await strls.write(Buffer.concat(waiting));
      waiting = [];
      waitingBytes = 0;
    }
  }
  if (data.length > 0) await write(Buffer.concat(data));
  if (waiting.length > 0) await strls.write(Buffer.concat(waiting));
  await write(encoder.afterData());
  for await (const chunk of strls.read()) {
    encoder.countStrls(chunk.length);
    await write(chunk);
  }
  await write(encoder.end());
}
