/**
 * The storage (audio) and stream (video) listeners: real, tiny media from
 * src/sandbox/fixtures, behind signed URLs. Paths are opaque to clients:
 *   storage: /audio/<study>/<hash>/<row>.mp3
 *   stream:  /video/<study>/<hash>/<row>.mp4, /video/<study>/<hash>/<row>/index.m3u8 and seg<N>.ts
 *
 * Every file is distinct: its path is written into it (mediaTag) where its format lets a
 * player skip it (an ID3v2 frame before the MP3, a `free` box after the MP4, a null packet
 * after a TS segment), so a test can tell which recording an archived file is.
 */
import { readFileSync } from 'node:fs';
import type { MediaLinker } from './dataset.ts';
import type { Reply } from './server.ts';
import { splitTarget, type UrlSigner } from './signing.ts';

/** Beside this file: in src/, and in a build (dist/, .build/<fingerprint>/), which copies them. */
const fixtureDir = new URL('./fixtures/', import.meta.url);
const SEGMENT_SECONDS = 0.5;
const TS_PACKET = 188;

export interface MediaBodies {
  mp3: Buffer;
  mp4: Buffer;
  segments: Buffer[];
}

/** Loads the fixtures once and scales them: bigger bodies that stay well-formed. */
export function loadMedia(scale: number): MediaBodies {
  const read = (name: string) => readFileSync(new URL(name, fixtureDir));
  return {
    mp3: repeatTo(read('tone.mp3'), scale),
    mp4: padMp4(read('clip.mp4'), scale),
    segments: [padTs(read('seg0.ts'), scale), padTs(read('seg1.ts'), scale)],
  };
}

/** MP3 frames concatenate: the tone repeated. */
function repeatTo(body: Buffer, scale: number): Buffer {
  const copies = Math.max(1, Math.round(scale));
  return copies === 1 ? body : Buffer.concat(Array.from({ length: copies }, () => body));
}

/** An MP4 followed by a `free` box, which players skip. */
function padMp4(body: Buffer, scale: number): Buffer {
  const extra = Math.round(body.length * (scale - 1));
  if (extra < 8) return body;
  const box = Buffer.alloc(extra);
  box.writeUInt32BE(extra, 0);
  box.write('free', 4, 'latin1');
  return Buffer.concat([body, box]);
}

/** A TS segment followed by null packets (PID 0x1FFF), which demuxers drop. */
function padTs(body: Buffer, scale: number): Buffer {
  const packets = Math.round((body.length * (scale - 1)) / TS_PACKET);
  if (packets < 1) return body;
  const pad = Buffer.alloc(packets * TS_PACKET, 0xff);
  for (let p = 0; p < packets; p++) {
    const at = p * TS_PACKET;
    pad[at] = 0x47;
    pad[at + 1] = 0x1f;
    pad[at + 2] = 0xff;
    pad[at + 3] = 0x10;
  }
  return Buffer.concat([body, pad]);
}

/** Issues the signed URLs that the single-response call puts on transcript rows. */
export function mediaLinker(signer: UrlSigner, storageUrl: string, streamUrl: string): MediaLinker {
  return {
    audio: (path) => signer.url(storageUrl, path),
    video: (path) => ({
      stream_url: signer.url(streamUrl, `${path}/index.m3u8`),
      mp4_url: signer.url(streamUrl, `${path}.mp4`),
    }),
  };
}

export function storageHandler(signer: UrlSigner, bodies: MediaBodies): (target: string) => Reply {
  return (target) => {
    const refused = checkSignature(signer, target);
    if (refused) return refused;
    const [path] = splitTarget(target);
    if (/^\/audio\/.+\.mp3$/.test(path)) return media(tagMp3(bodies.mp3, mediaTag(path)), 'audio/mpeg');
    return notFound();
  };
}

export function streamHandler(signer: UrlSigner, bodies: MediaBodies): (target: string) => Reply {
  return (target) => {
    const refused = checkSignature(signer, target);
    if (refused) return refused;
    const [path] = splitTarget(target);
    if (/^\/video\/.+\.mp4$/.test(path)) return media(tagMp4(bodies.mp4, mediaTag(path)), 'video/mp4');
    if (/^\/video\/.+\/index\.m3u8$/.test(path)) {
      return media(
        Buffer.from(playlist(signer, path, bodies.segments.length)),
        'application/vnd.apple.mpegurl',
      );
    }
    const segment = /^\/video\/.+\/seg(\d+)\.ts$/.exec(path);
    const body = segment ? bodies.segments[Number(segment[1])] : undefined;
    return body ? media(tagTs(body, mediaTag(path)), 'video/mp2t') : notFound();
  };
}

/** An HLS playlist whose segment URIs are relative and carry their own signatures. */
function playlist(signer: UrlSigner, playlistPath: string, segments: number): string {
  const dir = playlistPath.slice(0, playlistPath.lastIndexOf('/') + 1);
  const lines = [
    '#EXTM3U',
    '#EXT-X-VERSION:3',
    '#EXT-X-TARGETDURATION:1',
    '#EXT-X-MEDIA-SEQUENCE:0',
    '#EXT-X-PLAYLIST-TYPE:VOD',
  ];
  for (let n = 0; n < segments; n++) {
    lines.push(`#EXTINF:${SEGMENT_SECONDS.toFixed(6)},`, `seg${n}.ts?${signer.query(`${dir}seg${n}.ts`)}`);
  }
  lines.push('#EXT-X-ENDLIST', '');
  return lines.join('\n');
}

function checkSignature(signer: UrlSigner, target: string): Reply | undefined {
  const verdict = signer.verify(target);
  if (verdict === 'valid') return undefined;
  const message = verdict === 'expired' ? 'Request has expired' : 'Signature does not match';
  return {
    status: 403,
    headers: { 'content-type': 'application/xml' },
    body: Buffer.from(
      `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>AccessDenied</Code><Message>${message}</Message></Error>\n`,
    ),
  };
}

/** The text written into the file served at `path`: unique per file, the same on every request. */
export function mediaTag(path: string): string {
  return `study-export sandbox media ${path}`;
}

/** An ID3v2.3 tag with one TXXX frame ("study-export" = tag) before the MP3 frames. */
export function tagMp3(body: Buffer, tag: string): Buffer {
  const content = Buffer.concat([
    Buffer.from([0]),
    Buffer.from('study-export\0', 'latin1'),
    Buffer.from(tag, 'latin1'),
  ]);
  const frame = Buffer.alloc(10);
  frame.write('TXXX', 0, 'latin1');
  frame.writeUInt32BE(content.length, 4);
  const header = Buffer.from([0x49, 0x44, 0x33, 3, 0, 0, 0, 0, 0, 0]);
  const size = frame.length + content.length;
  // The tag's size is "syncsafe": 7 bits per byte.
  for (let i = 0; i < 4; i++) header[9 - i] = (size >> (7 * i)) & 0x7f;
  return Buffer.concat([header, frame, content, body]);
}

/** A `free` box holding the tag after the MP4's boxes. */
export function tagMp4(body: Buffer, tag: string): Buffer {
  const text = Buffer.from(tag, 'latin1');
  const box = Buffer.alloc(8);
  box.writeUInt32BE(8 + text.length, 0);
  box.write('free', 4, 'latin1');
  return Buffer.concat([body, box, text]);
}

/** Null packets (PID 0x1FFF) carrying the tag after the segment's packets. */
export function tagTs(body: Buffer, tag: string): Buffer {
  const text = Buffer.from(tag, 'latin1');
  const payload = TS_PACKET - 4;
  const count = Math.ceil(text.length / payload);
  const packets = Buffer.alloc(count * TS_PACKET, 0xff);
  for (let p = 0; p < count; p++) {
    const at = p * TS_PACKET;
    packets.set([0x47, 0x1f, 0xff, 0x10 | (p & 0x0f)], at);
    text.copy(packets, at + 4, p * payload, (p + 1) * payload);
  }
  return Buffer.concat([body, packets]);
}

function media(body: Buffer, contentType: string): Reply {
  return {
    status: 200,
    headers: { 'content-type': contentType, 'cache-control': 'private, max-age=3600' },
    body,
  };
}

function notFound(): Reply {
  return {
    status: 404,
    headers: { 'content-type': 'application/xml' },
    body: Buffer.from('<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>NoSuchKey</Code></Error>\n'),
  };
}
