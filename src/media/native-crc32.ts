/**
 * archiver's zip writer (compress-commons) computes every entry's CRC-32 with the crc-32
 * package, in JavaScript: about a tenth of the media step's CPU profile on ~1 MB files.
 * Node's own zlib.crc32 (native, Node 20.15+) computes the same checksum several times
 * faster, so the package's `buf` is pointed at it once, when the archive module loads. Both take the
 * previous CRC as the seed; crc-32 returns it signed, zlib unsigned, hence `| 0`.
 */

import { crc32 as zlibCrc32 } from 'node:zlib';
import crc32 from 'crc-32';

crc32.buf = (data: number[] | Uint8Array, seed?: number): number =>
  zlibCrc32(data instanceof Uint8Array ? data : Uint8Array.from(data), (seed ?? 0) >>> 0) | 0;
