/**
 * Small inline SVG charts for report.html: written here rather than taken from a chart
 * library, because the page must open from a folder with nothing fetched and a few bars need
 * no dependency. Every chart has a <title> and <desc> for screen readers; parts are told
 * apart by pattern and label as well as colour, so the page reads in greyscale and in print.
 * Every text passes through escapeHtml: labels are often the service's (or respondents') text.
 */
import { escapeHtml, shorten } from '../codecs/escape.ts';

export type SegmentStyle = 'solid' | 'hatched' | 'dotted';

export interface Segment {
  label: string;
  value: number;
  style: SegmentStyle;
}

interface ChartText {
  /** Unique in the page: ids of the title, desc and patterns derive from it. */
  id: string;
  title: string;
  desc: string;
}

const colours: Record<SegmentStyle, string> = { solid: '#1f5fa8', hatched: '#b4530a', dotted: '#6b7280' };

function defs(id: string): string {
  return (
    `<defs><pattern id="${id}-hatched" patternUnits="userSpaceOnUse" width="6" height="6" patternTransform="rotate(45)">` +
    `<rect width="6" height="6" fill="#fde8d4"/><line x1="0" y1="0" x2="0" y2="6" stroke="${colours.hatched}" stroke-width="3"/></pattern>` +
    `<pattern id="${id}-dotted" patternUnits="userSpaceOnUse" width="5" height="5">` +
    `<rect width="5" height="5" fill="#eef0f3"/><circle cx="2.5" cy="2.5" r="1.2" fill="${colours.dotted}"/></pattern></defs>`
  );
}

function fill(id: string, style: SegmentStyle): string {
  return style === 'solid' ? colours.solid : `url(#${id}-${style})`;
}

function open(text: ChartText, width: number, height: number): string {
  const id = escapeHtml(text.id);
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" ` +
    `role="img" aria-labelledby="${id}-t ${id}-d" font-family="system-ui, sans-serif" font-size="12">` +
    `<title id="${id}-t">${escapeHtml(text.title)}</title><desc id="${id}-d">${escapeHtml(text.desc)}</desc>${defs(id)}`
  );
}

/** A legend row: a swatch and its name per style used. */
function legend(id: string, items: readonly { label: string; style: SegmentStyle }[], y: number): string {
  let x = 0;
  return items
    .map((item) => {
      const part =
        `<rect x="${x}" y="${y}" width="14" height="14" fill="${fill(id, item.style)}" stroke="#333" stroke-width="0.5"/>` +
        `<text x="${x + 19}" y="${y + 11}">${escapeHtml(item.label)}</text>`;
      x += 30 + Array.from(item.label).length * 7;
      return part;
    })
    .join('');
}

/** One horizontal stacked bar per row, with the row's label left and its numbers right. */
export function stackedBars(
  text: ChartText,
  rows: readonly { label: string; full?: string; segments: readonly Segment[] }[],
): string {
  const labelWidth = 250;
  const barWidth = 300;
  const rowHeight = 22;
  const width = labelWidth + barWidth + 220;
  const height = rows.length * rowHeight + 30;
  const id = escapeHtml(text.id);
  const max = Math.max(1, ...rows.map((row) => row.segments.reduce((n, s) => n + s.value, 0)));
  const parts = [open(text, width, height)];
  rows.forEach((row, index) => {
    const y = index * rowHeight;
    const total = row.segments.reduce((n, s) => n + s.value, 0);
    parts.push(
      `<g><title>${escapeHtml(`${row.full ?? row.label}: ${row.segments.map((s) => `${s.value} ${s.label}`).join(', ')}`)}</title>`,
      `<text x="${labelWidth - 6}" y="${y + 15}" text-anchor="end">${escapeHtml(shorten(row.label, 38))}</text>`,
    );
    let x = labelWidth;
    for (const segment of row.segments) {
      const w = (segment.value / max) * barWidth;
      if (w > 0)
        parts.push(
          `<rect x="${x.toFixed(1)}" y="${y + 3}" width="${w.toFixed(1)}" height="${rowHeight - 6}" fill="${fill(id, segment.style)}" stroke="#333" stroke-width="0.5"/>`,
        );
      x += w;
    }
    const numbers = row.segments.map((s) => `${s.value} ${s.label}`).join(', ');
    parts.push(
      `<text x="${(labelWidth + (total / max) * barWidth + 6).toFixed(1)}" y="${y + 15}">${escapeHtml(numbers)}</text></g>`,
    );
  });
  const styles = rows[0]?.segments.map((s) => ({ label: s.label, style: s.style })) ?? [];
  parts.push(legend(id, styles, rows.length * rowHeight + 10), '</svg>');
  return parts.join('');
}

/** Vertical bars with a label under some of them (every `labelEvery`-th, the first and the last). */
export function columnBars(
  text: ChartText,
  bars: readonly { label: string; value: number }[],
  options: { labelEvery?: number; unit?: string } = {},
): string {
  const width = 640;
  const plotHeight = 150;
  const top = 16;
  const left = 40;
  const height = top + plotHeight + 40;
  const max = Math.max(1, ...bars.map((bar) => bar.value));
  const slot = (width - left - 10) / Math.max(1, bars.length);
  const every = options.labelEvery ?? 1;
  const parts = [open(text, width, height)];
  parts.push(
    `<line x1="${left}" y1="${top + plotHeight}" x2="${width - 10}" y2="${top + plotHeight}" stroke="#333"/>`,
    `<text x="${left - 4}" y="${top + 4}" text-anchor="end">${max}</text>`,
    `<text x="${left - 4}" y="${top + plotHeight}" text-anchor="end">0</text>`,
  );
  bars.forEach((bar, index) => {
    const h = (bar.value / max) * plotHeight;
    const x = left + index * slot;
    const w = Math.max(1, slot * 0.8);
    parts.push(
      `<g><title>${escapeHtml(`${bar.label}: ${bar.value}${options.unit ? ` ${options.unit}` : ''}`)}</title>` +
        `<rect x="${(x + slot * 0.1).toFixed(1)}" y="${(top + plotHeight - h).toFixed(1)}" width="${w.toFixed(1)}" height="${h.toFixed(1)}" fill="${colours.solid}"/>`,
    );
    if (bars.length <= 24 && bar.value > 0)
      parts.push(
        `<text x="${(x + slot / 2).toFixed(1)}" y="${(top + plotHeight - h - 3).toFixed(1)}" text-anchor="middle">${bar.value}</text>`,
      );
    parts.push('</g>');
    if (index % every === 0 || index === bars.length - 1)
      parts.push(
        `<text x="${(x + slot / 2).toFixed(1)}" y="${top + plotHeight + 16}" text-anchor="middle">${escapeHtml(bar.label)}</text>`,
      );
  });
  parts.push('</svg>');
  return parts.join('');
}
