/**
 * The .sav codec read back by three readers this project did not write (ReadStat, PSPP and R's
 * haven), value by value against the wide sheet's values: every text whole (past 255 bytes,
 * and past 32,767 across its parts), UTF-8, times, codes with their value labels, labels.
 */
import { createReadStream } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LabelledValue } from '../../../src/output/labelled/dataset.ts';
import { checkSav } from '../../../src/output/sav/check.ts';
import { savColumns } from '../../../src/output/sav/variables.ts';
import {
  type CsvRead,
  havenRead,
  isoFromSpssSeconds,
  isoFromUsTime,
  isoSecond,
  numberFrom,
  psppDictionary,
  psppRows,
  readstatMetadata,
  readstatRows,
} from '../../helpers/statistics.ts';
import { type HostileWide, hostileWide, measured, writeSavFile } from '../../helpers/statistics-data.ts';

/** The title cut at a character to leave the export time whole in SPSS's 64 bytes. */
const FILE_LABEL = 'Hostile study ☕ — عر… exported 2026-11-28 07:45 UTC';

let dir: string;
let path: string;
let data: HostileWide;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sav-'));
  path = join(dir, 'hostile.sav');
  data = hostileWide();
  await writeSavFile(path, data);
});
afterAll(() => rm(dir, { recursive: true, force: true }));

/** The values each variable should read back as: text, numbers, times as ISO seconds. */
function expected(): Map<string, (string | number | null)[]> {
  const { values } = measured(data);
  return new Map(
    data.wide.dataset.variables.map((variable, i) => [
      variable.name,
      values.map((row) => {
        const value: LabelledValue = row[i] ?? null;
        if (variable.kind === 'time') return typeof value === 'number' ? isoSecond(value) : null;
        return value;
      }),
    ]),
  );
}

function withLineFeeds(
  values: Map<string, (string | number | null)[]>,
): Map<string, (string | number | null)[]> {
  return new Map(
    [...values].map(([name, column]) => [
      name,
      column.map((v) => (typeof v === 'string' ? v.replaceAll('\r\n', '\n') : v)),
    ]),
  );
}

/** A reader's CSV as values per variable, a text's parts joined. */
function fromCsv(
  read: CsvRead,
  time: (text: string) => string | null,
): Map<string, (string | number | null)[]> {
  const columns = savColumns(data.wide.dataset, measured(data).measure);
  return new Map(
    columns.map(({ variable, targets }) => [
      variable.name,
      read.rows.map((row) => {
        const texts = targets.map((t) => row[t.name] ?? '');
        if (variable.kind === 'text') return texts.join('');
        if (variable.kind === 'time') return time(texts[0]!);
        return numberFrom(texts[0]!);
      }),
    ]),
  );
}

describe('an SPSS system file', () => {
  it('holds a text past 32,766 bytes in parts, each very long string past 255 bytes', () => {
    const columns = savColumns(data.wide.dataset, measured(data).measure);
    const widths = columns.flatMap((c) => c.targets.map((t) => t.width));
    expect(Math.max(...widths)).toBe(32766);
    expect(columns.some((c) => c.targets.length === 2)).toBe(true);
  });

  it('reads back whole in ReadStat, value by value', async () => {
    const read = await readstatRows(path);
    expect(read.rows).toHaveLength(data.rows.length);
    expect(fromCsv(read, isoFromSpssSeconds)).toEqual(expected());
    const meta = await readstatMetadata(path);
    expect(meta['Text encoding']).toBe('UTF-8');
    expect(meta['Table label']).toBe(FILE_LABEL);
  });

  it('reads back whole in PSPP, with labels, formats and value labels', async () => {
    const read = await psppRows(path);
    // PSPP's CSV writer ends every line in a value with \n (ReadStat and haven see the \r\n).
    expect(fromCsv(read, isoFromUsTime)).toEqual(withLineFeeds(expected()));
    const dictionary = await psppDictionary(path);
    const byName = dictionary.variables;
    expect(byName['created_at']).toMatchObject({ format: 'DATETIME20.0', measure: 'Scale' });
    expect(byName['status']?.measure).toBe('Nominal');
    expect(byName['q_dg_1']?.label).toBe('Question 1: what do you think? ☕');
    expect(byName['q_dg_7__concept_h']?.label).toBe('Question 7: what do you think? ☕');
    expect(dictionary.valueLabels).toEqual({
      status: { '1': 'complete', '2': 'in progress' },
      modality: { '1': 'text', '2': 'audio', '3': 'video' },
    });
    expect(dictionary.fileLabel).toBe(FILE_LABEL);
  });

  it('reads back whole in haven, with types, labels and value labels', async () => {
    const read = await havenRead(path);
    const values = new Map(
      data.wide.dataset.variables.map((v) => {
        const parts = savColumns(data.wide.dataset, measured(data).measure).find(
          (c) => c.variable.name === v.name,
        )!;
        const columns = parts.targets.map((t) => read.columns[t.name]!);
        if (v.kind !== 'text') return [v.name, columns[0]!.values];
        return [v.name, columns[0]!.values.map((_, r) => columns.map((c) => c.values[r]).join(''))];
      }),
    );
    expect(values).toEqual(expected());
    expect(read.columns['created_at']?.class).toContain('POSIXct');
    expect(read.columns['status']?.class).toContain('haven_labelled');
    expect(read.columns['status']?.labels).toEqual({ complete: 1, 'in progress': 2 });
    expect(read.columns['modality']?.labels).toEqual({ text: 1, audio: 2, video: 3 });
    expect(read.columns['q_dg_2']?.label).toBe(data.columns[1]!.header);
    expect(read.columns['response_number']?.class).toEqual(['numeric']);
    expect(read.columns['response_id']?.class).toEqual(['character']);
  });

  it("passes verify's check whole, and fails it cut short, padded or with a case too many", async () => {
    expect(await checkSav(createReadStream(path))).toEqual([]);
    const bytes = await readFile(path);
    const chunks = (b: Buffer) =>
      (async function* () {
        yield b;
      })();
    expect(await checkSav(chunks(bytes.subarray(0, bytes.length - 100)))).not.toEqual([]);
    expect(await checkSav(chunks(Buffer.concat([bytes, Buffer.alloc(8, 254)])))).not.toEqual([]);
    const moreCases = Buffer.from(bytes);
    moreCases.writeInt32LE(data.rows.length + 1, 80);
    expect(await checkSav(chunks(moreCases))).toEqual([
      `${data.rows.length} cases, the header says ${data.rows.length + 1}`,
    ]);
  });
});
