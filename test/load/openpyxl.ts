/**
 * openpyxl (Debian: python3-openpyxl), a reader independent of exceljs and SheetJS, on a
 * workbook: what it says of each sheet's styles, frozen panes, row heights and print settings.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';

export interface OpenpyxlCell {
  /** A1 address. */
  at: string;
  kind: 'text' | 'date' | 'number' | 'bool';
  wrap: boolean;
  /** Text cells: their line feeds + 1, and characters. */
  lines?: number;
  length?: number;
  numberFormat: string;
  /** Date cells: whether the value has no fraction of a second. */
  wholeSecond?: boolean;
}

export interface OpenpyxlSheet {
  name: string;
  freezePanes: string | null;
  printTitleRows: string | null;
  orientation: string | null;
  fitToPage: boolean;
  fitToWidth: number | null;
  fitToHeight: number | null;
  widths: Record<string, number | null>;
  header: { value: string; bold: boolean; fill: string | null; fillType: string | null; wrap: boolean }[];
  /** Row number -> height in points (null: none set). */
  heights: Record<string, number | null>;
  cells: OpenpyxlCell[];
}

const script = `
import datetime, json, sys
import openpyxl
book = openpyxl.load_workbook(sys.argv[1])
sheets = []
for ws in book.worksheets:
    setup = ws.page_setup
    pr = ws.sheet_properties.pageSetUpPr
    cells, heights = [], {}
    for row in ws.iter_rows():
        heights[str(row[0].row)] = ws.row_dimensions[row[0].row].height
        for c in row:
            if c.value is None or c.row == 1:
                continue
            v = c.value
            cell = {'at': c.coordinate, 'wrap': bool(c.alignment.wrap_text), 'numberFormat': c.number_format}
            if isinstance(v, bool):
                cell['kind'] = 'bool'
            elif isinstance(v, datetime.datetime):
                cell['kind'] = 'date'
                cell['wholeSecond'] = v.microsecond == 0
            elif isinstance(v, (int, float)):
                cell['kind'] = 'number'
            else:
                cell['kind'] = 'text'
                cell['lines'] = str(v).count('\\n') + 1
                cell['length'] = len(str(v))
            cells.append(cell)
    header = []
    for c in ws[1]:
        fill = c.fill
        header.append({'value': str(c.value), 'bold': bool(c.font.b), 'wrap': bool(c.alignment.wrap_text),
                       'fillType': fill.fill_type, 'fill': fill.fgColor.rgb if fill.fill_type else None})
    sheets.append({
        'name': ws.title,
        'freezePanes': ws.freeze_panes,
        'printTitleRows': ws.print_title_rows,
        'orientation': setup.orientation,
        'fitToPage': bool(pr is not None and pr.fitToPage),
        'fitToWidth': None if setup.fitToWidth is None else int(setup.fitToWidth),
        'fitToHeight': None if setup.fitToHeight is None else int(setup.fitToHeight),
        'widths': {k: d.width for k, d in ws.column_dimensions.items()},
        'header': header,
        'heights': heights,
        'cells': cells,
    })
print(json.dumps(sheets))
`;

/** Debian's python3, which python3-openpyxl installs into, before whichever is first on PATH. */
const python = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';

export function openpyxlSheets(file: string): OpenpyxlSheet[] {
  const out = execFileSync(python, ['-c', script, file], { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
  return JSON.parse(out) as OpenpyxlSheet[];
}
