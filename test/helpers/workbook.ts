/**
 * A run's workbooks read back by SheetJS (xlsx), a reader independent of exceljs, and
 * compared cell by cell with the run's Parquet tables and wide CSVs: values, and text as
 * text, numbers as numbers, timestamps as date cells; the header row frozen and filtered.
 */
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { expect } from 'vitest';
import XLSX from 'xlsx';
import { nameOf } from '../../src/names.ts';
import { formulaPattern } from '../../src/output/formats/csv.ts';
import { spreadsheetTime } from '../../src/output/formats/wide.ts';
import { cutText, excelCellLimit, lineFeeds } from '../../src/output/formats/xlsx-workbook.ts';
import { columnNames, type TableName, tables, wideSheet } from '../../src/tables/index.ts';
import { readCsv, readHyparquet, tableRow } from './readers.ts';
import { readZip } from './zip.ts';

type Cell = XLSX.CellObject | undefined;

/** What a cell must be for a value of a declared kind ('' and null are empty cells). */
function cellProblem(
  cell: Cell,
  value: unknown,
  kind: 'text' | 'integer' | 'timestamp' | 'sheet-time' | 'boolean',
): string | null {
  if (value === null || value === '')
    return cell === undefined ? null : `expected an empty cell, found ${cell.v}`;
  if (cell === undefined) return `expected ${JSON.stringify(value)}, found an empty cell`;
  if (kind === 'integer')
    return cell.t === 'n' && cell.v === Number(value) ? null : `expected number ${value}`;
  if (kind === 'boolean')
    return cell.t === 'b' && cell.v === value ? null : `expected boolean ${value}, found ${cell.t} ${cell.v}`;
  if (kind === 'timestamp' || kind === 'sheet-time') {
    const ms = Math.round(((cell.v as number) - 25569) * 86_400_000);
    const isDate = cell.t === 'n' && XLSX.SSF.is_date(String(cell.z));
    // To the second, in a workbook as in a wide CSV: a table's time is cut to the second.
    const iso = new Date(ms).toISOString();
    const expected = kind === 'timestamp' ? spreadsheetTime(String(value)) : value;
    return isDate && spreadsheetTime(iso) === expected && iso.endsWith('.000Z')
      ? null
      : `expected date ${value}, found ${cell.t} ${cell.v}`;
  }
  // Line breaks are line feeds in a workbook, whatever the service sent.
  const text = lineFeeds(String(value));
  const expected = text.length > excelCellLimit ? cutText(text) : text;
  if (cell.t !== 's' || cell.f !== undefined) return `expected a text cell, found type ${cell.t}`;
  return cell.v === expected ? null : `text differs (${String(cell.v).slice(0, 40)}…)`;
}

function kindOf(table: TableName, column: string): 'text' | 'integer' | 'timestamp' | 'boolean' {
  const type = tables[table].columns.find((c) => c.name === column)?.type;
  return type === 'integer' || type === 'timestamp' || type === 'boolean' ? type : 'text';
}

/** A wide CSV cell without the formula escape the CSV writer may have added. */
function unescaped(value: string | null, escapeFormulae: boolean): string | null {
  return escapeFormulae && value?.startsWith("'") && formulaPattern.test(value.slice(1))
    ? value.slice(1)
    : value;
}

/** Every disagreement between the workbooks and the tables; `cut` counts texts past Excel's limit. */
export async function workbookProblems(
  runDir: string,
  studies: readonly { id: string; link_id: string }[],
  options: { escapeFormulae: boolean },
): Promise<{ problems: string[]; cut: number }> {
  const answers = (await readHyparquet(join(runDir, 'answers.parquet'))).map((r) => tableRow('answers', r));
  const transcript = (await readHyparquet(join(runDir, 'transcript.parquet'))).map((r) =>
    tableRow('transcript', r),
  );
  const titles = new Map(
    (await readHyparquet(join(runDir, 'studies.parquet'))).map((r) => [String(r.study_id), String(r.title)]),
  );
  const problems: string[] = [];
  let cut = 0;
  for (const { id, link_id } of studies) {
    const study = { id, link_id, title: titles.get(id) ?? '' };
    const file = join(runDir, 'xlsx', `${nameOf(study.link_id)}.xlsx`);
    const book = XLSX.read(await readFile(file), { cellNF: true });
    expect(book.SheetNames).toEqual(['About', 'wide', 'answers', 'transcript']);
    const about = XLSX.utils.sheet_to_json<unknown[]>(book.Sheets.About!, { header: 1, defval: null });
    expect(about.slice(0, 3)).toEqual([
      ['Study', study.title],
      ['link_id', study.link_id],
      ['study_id', study.id],
    ]);
    problems.push(...(await workbookXmlProblems(file, study)));

    // wide: the wide CSV's header and rows (without the CSV's formula escapes).
    const [header, ...records] = (await readCsv(join(runDir, 'wide', `${nameOf(study.link_id)}.csv`)))
      .records;
    const wide = book.Sheets.wide!;
    expect(XLSX.utils.decode_range(wide['!ref']!).e.r).toBe(records.length);
    header!.forEach((name, c) => {
      const at = XLSX.utils.encode_cell({ r: 0, c });
      if (wide[at]?.v !== name) problems.push(`wide header ${at}: ${wide[at]?.v} vs ${name}`);
      const fixed = wideSheet.fixed[c];
      const kind =
        fixed?.type === 'integer' ? 'integer' : fixed?.type === 'timestamp' ? 'sheet-time' : 'text';
      records.forEach((record, r) => {
        const cell = wide[XLSX.utils.encode_cell({ r: r + 1, c })];
        const problem = cellProblem(cell, unescaped(record[c] ?? null, options.escapeFormulae), kind);
        if (problem)
          problems.push(`${study.link_id} wide ${XLSX.utils.encode_cell({ r: r + 1, c })}: ${problem}`);
      });
    });

    for (const [table, rows] of [
      ['answers', answers],
      ['transcript', transcript],
    ] as const) {
      const sheet = book.Sheets[table]!;
      const mine = rows.filter((row) => row.study_id === study.id);
      expect(XLSX.utils.decode_range(sheet['!ref']!).e.r).toBe(mine.length);
      columnNames(table).forEach((name, c) => {
        if (sheet[XLSX.utils.encode_cell({ r: 0, c })]?.v !== name) problems.push(`${table} header ${name}`);
        mine.forEach((row, r) => {
          const value = row[name];
          if (typeof value === 'string' && value.length > excelCellLimit) cut++;
          const problem = cellProblem(
            sheet[XLSX.utils.encode_cell({ r: r + 1, c })],
            value,
            kindOf(table, name),
          );
          if (problem) problems.push(`${study.link_id} ${table} row ${r + 2} ${name}: ${problem}`);
        });
      });
    }

    // The header row is frozen, in every data sheet.
    const xml = await readZip(file, ['.xml']);
    for (const n of [2, 3, 4]) {
      const sheetXml = xml.find((e) => e.name === `xl/worksheets/sheet${n}.xml`)?.text ?? '';
      expect(sheetXml).toMatch(/<pane [^>]*ySplit="1"[^>]*state="frozen"/);
      expect(sheetXml).toMatch(/<col [^>]*width="/);
    }
  }
  return { problems, cut };
}

type XmlNode = Record<string, unknown>;
/** fast-xml-parser 3 (through s3rver): every element an array, attributes and text kept as written. */
const { parse } = createRequire(import.meta.url)('fast-xml-parser') as {
  parse(xml: string, options: object): XmlNode;
};
const parseXml = (xml: string): XmlNode =>
  parse(xml, {
    ignoreAttributes: false,
    attributeNamePrefix: '@',
    textNodeName: '#text',
    arrayMode: true,
    parseNodeValue: false,
    parseAttributeValue: false,
    trimValues: false,
    tagValueProcessor: decodeEntities,
    attrValueProcessor: decodeEntities,
  });
/** XML's entities and character references (this parser leaves them as written). */
function decodeEntities(text: string): string {
  const named: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };
  return text.replace(/&(#x[0-9a-fA-F]+|#\d+|amp|lt|gt|quot|apos);/g, (_, ref: string) =>
    ref.startsWith('#x')
      ? String.fromCodePoint(Number.parseInt(ref.slice(2), 16))
      : ref.startsWith('#')
        ? String.fromCodePoint(Number(ref.slice(1)))
        : (named[ref] as string),
  );
}
const nodes = (node: unknown, name: string): XmlNode[] => {
  const found = (node as XmlNode | undefined)?.[name];
  return found === undefined ? [] : Array.isArray(found) ? found : [found as XmlNode];
};
/** An element's text, whether the parser gave a string or a node with text. */
const textOf = (node: unknown): string =>
  node === undefined
    ? ''
    : typeof node === 'object'
      ? String((node as XmlNode)['#text'] ?? '')
      : String(node);
const one = (node: unknown, ...path: string[]): XmlNode | undefined =>
  path.reduce<XmlNode | undefined>((at, name) => nodes(at, name)[0], node as XmlNode);
/** The text of an inline string cell: every <t> under <is>, runs included. */
function inlineText(cell: XmlNode): string {
  const is = one(cell, 'is');
  const texts = [...nodes(is, 't'), ...nodes(is, 'r').flatMap((run) => nodes(run, 't'))];
  return texts.map(textOf).join('');
}

/**
 * The workbook's XML parsed as an independent reader (not exceljs, not SheetJS) sees it: a
 * hidden _xlnm._FilterDatabase name for each data sheet over the same range as its
 * autoFilter (LibreOffice shows a filter only with one), every multi-line cell with a
 * wrapping style, no _x000D_, has_audio / has_video boolean cells, and the properties naming
 * study-export and the study.
 */
export async function workbookXmlProblems(
  file: string,
  study: { id: string; link_id: string; title: string },
): Promise<string[]> {
  const problems: string[] = [];
  const parts = new Map((await readZip(file, ['.xml'])).map((e) => [e.name, e.text ?? '']));
  const part = (name: string) => parseXml(parts.get(name) ?? '');
  const workbook = one(part('xl/workbook.xml'), 'workbook');
  const names = nodes(one(workbook, 'definedNames'), 'definedName');
  const sheets = nodes(one(workbook, 'sheets'), 'sheet').map((sheet) => String(sheet['@name']));
  if (sheets.join() !== 'About,wide,answers,transcript') problems.push(`sheets ${sheets.join()}`);
  const wrapStyles = new Set(
    nodes(one(part('xl/styles.xml'), 'styleSheet', 'cellXfs'), 'xf').flatMap((xf, index) =>
      one(xf, 'alignment')?.['@wrapText'] === '1' ? [String(index)] : [],
    ),
  );
  let multiLine = 0;
  for (const [index, name] of sheets.entries()) {
    const xml = parts.get(`xl/worksheets/sheet${index + 1}.xml`) ?? '';
    if (xml.includes('_x000D_')) problems.push(`${name}: a carriage return stored as _x000D_`);
    const worksheet = one(parseXml(xml), 'worksheet');
    const filter = one(worksheet, 'autoFilter')?.['@ref'];
    const named = names.find(
      (n) => n['@name'] === '_xlnm._FilterDatabase' && n['@localSheetId'] === String(index),
    );
    if (name === 'About') {
      if (filter || named) problems.push('About: a filter');
      continue;
    }
    const expected = `'${name}'!${String(filter).replace(/([A-Z]+)(\d+)/g, '$$$1$$$2')}`;
    if (named?.['@hidden'] !== '1' || named['#text'] !== expected)
      problems.push(`${name}: no hidden _xlnm._FilterDatabase over ${expected} (${JSON.stringify(named)})`);
    const rows = nodes(one(worksheet, 'sheetData'), 'row');
    if (String(filter) !== `A1:${String(filter).match(/:([A-Z]+)/)?.[1]}${rows.length}`)
      problems.push(`${name}: the filter ${filter} does not cover its ${rows.length} rows`);
    const header = nodes(rows[0], 'c').map(inlineText);
    for (const row of rows.slice(1)) {
      for (const cell of nodes(row, 'c')) {
        const column = header[columnIndex(String(cell['@r']))];
        if (cell['@t'] === 'inlineStr' && inlineText(cell).includes('\n')) {
          multiLine++;
          if (!wrapStyles.has(String(cell['@s'] ?? '0')))
            problems.push(`${name} ${cell['@r']}: several lines, no wrap`);
        }
        if ((column === 'has_audio' || column === 'has_video') && cell['@t'] !== 'b')
          problems.push(`${name} ${cell['@r']} (${column}): not a boolean cell`);
      }
    }
  }
  if (multiLine === 0) problems.push('no multi-line cell to check');
  const application = textOf(one(part('docProps/app.xml'), 'Properties', 'Application'));
  if (application !== 'study-export') problems.push(`docProps/app.xml: Application ${application}`);
  const core = one(part('docProps/core.xml'), 'cp:coreProperties');
  const property = (name: string) => textOf(one(core, name));
  if (property('dc:creator') !== 'study-export') problems.push(`core.xml: creator ${property('dc:creator')}`);
  if (property('dc:title') !== study.title) problems.push(`core.xml: title ${property('dc:title')}`);
  if (!property('dc:subject').includes(study.link_id))
    problems.push(`core.xml: subject ${property('dc:subject')}`);
  return problems;
}

function columnIndex(ref: string): number {
  const letters = /^[A-Z]+/.exec(ref)?.[0] ?? 'A';
  return [...letters].reduce((n, c) => n * 26 + c.charCodeAt(0) - 64, 0) - 1;
}
