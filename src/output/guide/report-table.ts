import { escapeHtml as e } from '../codecs/escape.ts';
/** A table of numbers for report.html: a label per row, then right-aligned figures. */

export function numberTable(
  caption: string,
  headers: readonly string[],
  rows: readonly (string | number)[][],
): string {
  const head = headers.map((h, i) => `<th scope="col"${i > 0 ? ' class="n"' : ''}>${e(h)}</th>`).join('');
  const body = rows
    .map(
      (row) =>
        `<tr>${row.map((cell, i) => (i === 0 ? `<th scope="row">${e(String(cell))}</th>` : `<td class="n">${e(String(cell))}</td>`)).join('')}</tr>`,
    )
    .join('');
  return `<table><caption class="note">${e(caption)}</caption><thead><tr>${head}</tr></thead><tbody>${body}</tbody></table>`;
}
