/**
 * The tar writer's records (POSIX.1-2001 pax, readable by every tar since): a ustar header per
 * file, preceded by a pax extended header where the ustar fields cannot hold the truth (a path
 * over 100 bytes or not ASCII, a size of 8 GiB or more); a file's bytes follow, padded to
 * TAR_BLOCK, and two zero blocks end the archive. Headers carry owner 0 and mode 0644.
 */

export const TAR_BLOCK = 512;
const BLOCK = TAR_BLOCK;
/** The largest size a ustar size field (11 octal digits) holds. */
const MAX_USTAR_SIZE = 8 ** 11 - 1;

/** The headers of one regular file: a pax header (and its records) first where needed. */
export function tarHeaders(path: string, size: number, mtime: number): Buffer[] {
  const name = Buffer.from(path, 'utf8');
  const ascii = /^[\x20-\x7e]*$/.test(path);
  const records: string[] = [];
  if (!ascii || name.length > 100) records.push(paxRecord('path', path));
  if (size > MAX_USTAR_SIZE) records.push(paxRecord('size', String(size)));
  const blocks: Buffer[] = [];
  if (records.length > 0) {
    const body = Buffer.from(records.join(''), 'utf8');
    blocks.push(ustarHeader(asciiName(`PaxHeaders/${path}`), body.length, mtime, 'x'), padded(body));
  }
  blocks.push(ustarHeader(asciiName(path), Math.min(size, MAX_USTAR_SIZE), mtime, '0'));
  return blocks;
}

/** "<length> <key>=<value>\n", the length counting itself. */
function paxRecord(key: string, value: string): string {
  const rest = ` ${key}=${value}\n`;
  const restBytes = Buffer.byteLength(rest, 'utf8');
  let length = restBytes + 1;
  while (String(length).length + restBytes !== length) length = String(length).length + restBytes;
  return `${length}${rest}`;
}

/** A stand-in for a name the pax header carries: its ASCII, cut to the field. */
function asciiName(path: string): Buffer {
  return Buffer.from(path.replace(/[^\x20-\x7e]/g, '_').slice(-100), 'ascii');
}

function ustarHeader(name: Buffer, size: number, mtime: number, type: '0' | 'x'): Buffer {
  const header = Buffer.alloc(BLOCK);
  name.copy(header, 0, 0, 100);
  header.write('0000644\0', 100, 'ascii');
  header.write('0000000\0', 108, 'ascii');
  header.write('0000000\0', 116, 'ascii');
  header.write(`${size.toString(8).padStart(11, '0')}\0`, 124, 'ascii');
  header.write(`${mtime.toString(8).padStart(11, '0')}\0`, 136, 'ascii');
  header.write('        ', 148, 'ascii');
  header.write(type, 156, 'ascii');
  header.write('ustar\u000000', 257, 'ascii');
  let sum = 0;
  for (const byte of header) sum += byte;
  header.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 'ascii');
  return header;
}

function padded(body: Buffer): Buffer {
  const padding = (BLOCK - (body.length % BLOCK)) % BLOCK;
  return padding === 0 ? body : Buffer.concat([body, Buffer.alloc(padding)]);
}
