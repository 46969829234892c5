/**
 * A study's .sav and .dta written as a run writes them (rows added in any order, spilled, the
 * file written once the columns are known), read back by ReadStat, PSPP and R's haven and
 * compared value by value with the wide sheet written from the same rows.
 */
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStatisticsWriter, type StatisticsFormat } from '../../../src/output/formats/statistics.ts';
import { createWideWriter } from '../../../src/output/formats/wide.ts';
import { wideDataset } from '../../../src/output/labelled/wide.ts';
import { LocalStorage } from '../../../src/storage/local.ts';
import { readCsv } from '../../helpers/readers.ts';
import { statisticsAsSheet } from '../../helpers/statistics.ts';
import { type HostileWide, hostileWide } from '../../helpers/statistics-data.ts';

let dir: string;
let data: HostileWide;
let sheet: string[][];
const study = { title: 'Hostile study ☕', link_id: 'hostile-study' };

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'study-file-'));
  data = hostileWide(40, 25);
  const storage = new LocalStorage(join(dir, 'run'));
  const scratch = join(dir, 'scratch');
  await mkdir(scratch);
  const wide = createWideWriter(storage, scratch, 'hostile-study', { bom: false, escape_formulae: false });
  const writers = (['sav', 'dta'] as StatisticsFormat[]).map((format) =>
    createStatisticsWriter(format, storage, scratch, study, 'hostile-study'),
  );
  // Rows arrive out of order, as details finish.
  for (const row of [...data.rows].reverse()) {
    await wide.add(row);
    for (const writer of writers) await writer.add(row);
  }
  await wide.finish(data.columns);
  for (const writer of writers) await writer.finish(data.columns);
  sheet = (await readCsv(join(dir, 'run', 'wide', 'hostile-study.csv'))).records;
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe.each(['sav', 'dta'] as const)('a study file (%s)', (format) => {
  it('holds the wide sheet value by value, for every reader', async () => {
    const { dataset } = wideDataset(study, data.columns, new Date());
    const read = await statisticsAsSheet(
      join(dir, 'run', format, `hostile-study.${format}`),
      dataset.variables,
    );
    expect(Object.keys(read).sort()).toEqual(
      format === 'sav' ? ['haven', 'pspp', 'readstat'] : ['haven', 'readstat'],
    );
    const [, ...rows] = sheet;
    for (const [reader, columns] of Object.entries(read)) {
      dataset.variables.forEach((variable, c) => {
        const column = rows.map((row) => row[c] ?? '');
        // PSPP's CSV writer ends every line in a value with \n.
        const expected = reader === 'pspp' ? column.map((v) => v.replaceAll('\r\n', '\n')) : column;
        expect(columns.get(variable.name), `${reader}: ${variable.name} (${sheet[0]![c]})`).toEqual(expected);
      });
    }
  });
});
