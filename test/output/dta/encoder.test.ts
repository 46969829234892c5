/**
 * The .dta codec read back by readers this project did not write (ReadStat and R's haven; PSPP
 * reads no Stata files), value by value against the wide sheet's values: every text whole
 * (strL past 2,045 bytes), UTF-8, %tc times, codes with their value labels, labels cut at 80
 * characters with the whole text in the notes (a variable's notes read by R's readstata13:
 * ReadStat and haven read only the dataset's).
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkDta } from '../../../src/output/dta/check.ts';
import { DtaEncoder } from '../../../src/output/dta/encoder.ts';
import {
  havenRead,
  isoFromStataMs,
  isoSecond,
  numberFrom,
  readstata13Characteristics,
  readstatMetadata,
  readstatRows,
} from '../../helpers/statistics.ts';
import { type HostileWide, hostileWide, measured, writeDtaFile } from '../../helpers/statistics-data.ts';

let dir: string;
let path: string;
let data: HostileWide;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dta-'));
  path = join(dir, 'hostile.dta');
  data = hostileWide();
  await writeDtaFile(path, data);
});
afterAll(() => rm(dir, { recursive: true, force: true }));

function expected(): Map<string, (string | number | null)[]> {
  const { values } = measured(data);
  return new Map(
    data.wide.dataset.variables.map((variable, i) => [
      variable.name,
      values.map((row) => {
        const value = row[i] ?? null;
        return variable.kind === 'time' && typeof value === 'number' ? isoSecond(value) : value;
      }),
    ]),
  );
}

describe('a Stata dta 118 file', () => {
  it('keeps texts past 2,045 bytes as strLs and short ones as str#', () => {
    const encoder = new DtaEncoder(data.wide.dataset, measured(data).measure);
    const types = new Map(encoder.variables.map((v) => [v.source.name, v.type]));
    expect(types.get('q_dg_2')).toBe(32768);
    expect(types.get('a_lang')).toBe(2);
    expect(types.get('status')).toBe(65530);
    expect(types.get('created_at')).toBe(65526);
  });

  it('reads back whole in ReadStat, value by value', async () => {
    const read = await readstatRows(path);
    const values = new Map(
      data.wide.dataset.variables.map((v) => [
        v.name,
        read.rows.map((row) => {
          const text = row[v.name] ?? '';
          if (v.kind === 'text') return text;
          return v.kind === 'time' ? isoFromStataMs(text) : numberFrom(text);
        }),
      ]),
    );
    expect(values).toEqual(expected());
    const meta = await readstatMetadata(path);
    expect(meta['Format version']).toBe('118');
    expect(meta['Table label']).toBe('Hostile study ☕ — عربى (hostile-study) exported 2026-11-28 07:45 UTC');
  });

  it('reads back whole in haven, with types, labels and value labels', async () => {
    const read = await havenRead(path);
    const values = new Map(data.wide.dataset.variables.map((v) => [v.name, read.columns[v.name]!.values]));
    expect(values).toEqual(expected());
    expect(read.columns['created_at']?.class).toContain('POSIXct');
    expect(read.columns['status']?.labels).toEqual({ complete: 1, 'in progress': 2 });
    expect(read.columns['modality']?.labels).toEqual({ text: 1, audio: 2, video: 3 });
    const long = data.columns[1]!.header;
    expect(Array.from(long).length).toBeGreaterThan(80);
    expect(read.columns['q_dg_2']?.label).toBe(`${Array.from(long).slice(0, 79).join('')}…`);
    expect(read.columns['q_q_7_c693d2']?.label).toBe('سؤال بالعربية 问题');
    expect(read.label).toBe('Hostile study ☕ — عربى (hostile-study) exported 2026-11-28 07:45 UTC');
    expect(read.notes).toBeNull();
  });

  it('cuts a data label past 80 characters, keeping the whole label in the notes haven reads', async () => {
    const long = hostileWide(3, 2);
    const title = `A study whose title goes on and on ${'and on '.repeat(8)}— 終わり`;
    long.wide.dataset = { ...long.wide.dataset, label: title };
    const file = join(dir, 'long-label.dta');
    await writeDtaFile(file, long);
    const read = await havenRead(file);
    const end = long.wide.dataset.labelEnd;
    expect(read.label).toBe(
      `${Array.from(title)
        .slice(0, 80 - end.length - 1)
        .join('')}…${end}`,
    );
    expect(read.notes).toEqual(['1', `${title}${end}`]);
  });

  it("keeps a cut variable label whole in the variable's notes, as R's readstata13 reads them", async () => {
    const fields = await readstata13Characteristics(path);
    const long = data.columns[1]!.header;
    expect(fields).toContainEqual(['q_dg_2', 'note0', '1']);
    expect(fields).toContainEqual(['q_dg_2', 'note1', long]);
    // A label that fits has no note; each note is the whole of the label haven reads cut.
    expect(fields.filter(([owner]) => owner === 'q_q_7_c693d2')).toEqual([]);
    const haven = await havenRead(path);
    const noted = fields.filter(([, name]) => name === 'note1');
    expect(noted.length).toBeGreaterThan(1);
    for (const [owner, , text] of noted)
      expect(haven.columns[owner]?.label, owner).toBe(`${Array.from(text).slice(0, 79).join('')}…`);

    // UTF-8 whole: a long question in Arabic, CJK and emoji.
    const other = hostileWide(3, 2);
    const question = `${'ما رأيك في هذا المفهوم؟ 你觉得这个概念怎么样？ ☕ '.repeat(4)}終わり`;
    other.wide.dataset = {
      ...other.wide.dataset,
      variables: other.wide.dataset.variables.map((v) =>
        v.name === 'q_dg_1' ? { ...v, label: question } : v,
      ),
    };
    const file = join(dir, 'unicode-notes.dta');
    await writeDtaFile(file, other);
    expect(await readstata13Characteristics(file)).toContainEqual(['q_dg_1', 'note1', question]);
  });

  it("passes verify's check whole, and fails it cut short or padded", async () => {
    const bytes = await readFile(path);
    const reader = (b: Buffer) => async (start: number, end: number) => b.subarray(start, end);
    expect(await checkDta(reader(bytes), bytes.length)).toEqual([]);
    const cut = bytes.subarray(0, bytes.length - 20);
    expect(await checkDta(reader(cut), cut.length)).toEqual([
      `the map says ${bytes.length} bytes, the file has ${cut.length}`,
    ]);
    const padded = Buffer.concat([bytes, Buffer.from('x')]);
    expect(await checkDta(reader(padded), padded.length)).not.toEqual([]);
  });
});
