/**
 * A study's SPSS or Stata file: sav/<name>.sav or dta/<name>.dta, one row per response in the
 * wide sheet's order. Rows are measured as they arrive (WideMeasure: every string's width and
 * the long strings' bytes, which both formats declare before the first row) and spilled in
 * sheet order to the run's scratch folder, like the wide sheet's; once the study's columns are
 * known the file is encoded from the spill, one row at a time, into the storage. A .dta's strLs
 * follow its data, so they wait in a scratch file until the data is written. Memory stays flat
 * in the number of responses.
 */
import { createReadStream } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { WideColumn, WideRow } from '../../records.ts';
import { openLocalFile } from '../../storage/local-file.ts';
import type { Storage } from '../../storage/types.ts';
import { encodeDta, type StrlStore } from '../dta/index.ts';
import { WideMeasure, wideDataset } from '../labelled/wide.ts';
import { encodeSav } from '../sav/index.ts';
import type { StudyFileInput, StudyFileWriter } from './format.ts';
import { scratchName, wideRowSpill } from './wide.ts';

export const statisticsFormats = ['sav', 'dta'] as const;
export type StatisticsFormat = (typeof statisticsFormats)[number];

/** The statistics formats among `formats`, in a fixed order. */
export function statisticsFormatsOf(formats: readonly string[]): StatisticsFormat[] {
  return statisticsFormats.filter((format) => formats.includes(format));
}

export interface StatisticsFileWriter {
  add(row: WideRow): Promise<void>;
  /** Writes the file with the study's question and attribute columns; returns its path. */
  finish(columns: readonly WideColumn[]): Promise<string>;
  abort(): Promise<void>;
}

/** A study's file of `format` in a folder of the same name: sav/<name>.sav, dta/<name>.dta. */
export const statisticsFile = (format: StatisticsFormat, name: string) => `${format}/${name}.${format}`;

export function createStatisticsWriter(
  format: StatisticsFormat,
  storage: Storage,
  /** A local folder of the run's own. */
  scratchDir: string,
  study: { title: string; link_id: string },
  /** The study's file name (src/names.ts studyFileName), as its wide sheet's. */
  name: string,
): StatisticsFileWriter {
  const path = statisticsFile(format, name);
  const scratch = `${format}-${scratchName(name)}`;
  const spill = wideRowSpill(scratchDir, scratch);
  const strlPath = join(scratchDir, `${scratch}.strls`);
  const measure = new WideMeasure();

  return {
    async add(row) {
      measure.add(row);
      await spill.add(row);
    },
    async finish(columns) {
      const { dataset, values } = wideDataset(study, columns, new Date());
      const measured = measure.measured(columns);
      const rows = mapRows(spill.sorted(), values);
      const file = await storage.create(path);
      try {
        const write = (chunk: Buffer) => file.write(chunk);
        if (format === 'sav') await encodeSav(dataset, measured, rows, write);
        else await encodeDta(dataset, measured, rows, write, await strlFile(scratchDir, strlPath));
        await file.close();
      } catch (error) {
        await file.abort();
        throw error;
      } finally {
        await spill.remove();
        await rm(strlPath, { force: true });
      }
      return path;
    },
    async abort() {
      await spill.remove();
      await rm(strlPath, { force: true });
      await storage.delete(path);
    },
  };
}

/** A study format's writer (StudyFormatModule.open) for `format`. */
export function statisticsStudyWriter(format: StatisticsFormat, input: StudyFileInput): StudyFileWriter {
  const writer = createStatisticsWriter(format, input.storage, input.scratchDir, input.study, input.fileName);
  return {
    add: (rows) => writer.add(rows.wide),
    finish: async (columns) => ({ path: await writer.finish(columns) }),
    abort: () => writer.abort(),
  };
}

async function* mapRows<T>(rows: AsyncIterable<WideRow>, values: (row: WideRow) => T): AsyncIterable<T> {
  for await (const row of rows) yield values(row);
}

/** The strLs of a .dta in a local file while its data is written. */
async function strlFile(scratchDir: string, path: string): Promise<StrlStore> {
  await mkdir(scratchDir, { recursive: true });
  const file = await openLocalFile(path);
  let closed = false;
  return {
    write: (chunk) => file.write(chunk),
    async *read() {
      if (!closed) {
        await file.close();
        closed = true;
      }
      for await (const chunk of createReadStream(path)) yield chunk as Buffer;
    },
  };
}
