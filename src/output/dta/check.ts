/**
 * What `verify` checks of a Stata dta file without reading it whole: the header of format 118
 * (little-endian), the map's offsets (in order, the last one the file's size) and the tags the
 * map points at: a file cut short, padded or rewritten fails.
 */

/** Reads bytes [start, end) of the file. */
export type RangeRead = (start: number, end: number) => Promise<Buffer>;

const HEADER = '<stata_dta><header><release>118</release><byteorder>LSF</byteorder><K>';
/** The section each of the map's 14 offsets opens (the first is the file's start, the last its end). */
const TAGS = [
  '<stata_dta>',
  '<map>',
  '<variable_types>',
  '<varnames>',
  '<sortlist>',
  '<formats>',
  '<value_label_names>',
  '<variable_labels>',
  '<characteristics>',
  '<data>',
  '<strls>',
  '<value_labels>',
  '</stata_dta>',
];

/** The problems of a .dta of `bytes` bytes (none: its structure holds). */
export async function checkDta(read: RangeRead, bytes: number): Promise<string[]> {
  try {
    const head = await read(0, Math.min(bytes, 1024));
    if (head.toString('latin1', 0, HEADER.length) !== HEADER) return ['not a Stata file of format 118'];
    const mapAt = head.indexOf('</header><map>');
    if (mapAt < 0) return ['no map after the header'];
    const map = await read(mapAt + '</header><map>'.length, mapAt + '</header><map>'.length + 14 * 8);
    const offsets = Array.from({ length: 14 }, (_, i) => Number(map.readBigUInt64LE(i * 8)));
    if (offsets[13] !== bytes) return [`the map says ${offsets[13]} bytes, the file has ${bytes}`];
    const problems: string[] = [];
    for (let i = 0; i < TAGS.length; i++) {
      const at = offsets[i]!;
      const tag = TAGS[i]!;
      if (i > 0 && at < offsets[i - 1]!) problems.push(`the map's offset of ${tag} goes backwards`);
      else if ((await read(at, at + tag.length)).toString('latin1') !== tag)
        problems.push(`no ${tag} where the map says`);
    }
    return problems;
  } catch (error) {
    return [(error as Error).message];
  }
}
