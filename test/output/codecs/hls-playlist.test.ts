import { describe, expect, it } from 'vitest';
import { bestVariant, parsePlaylist, rewritePlaylist } from '../../../src/output/codecs/hls-playlist.ts';

describe('HLS playlists', () => {
  const media = [
    '#EXTM3U',
    '#EXT-X-VERSION:7',
    '#EXT-X-TARGETDURATION:4',
    '#EXT-X-MAP:URI="init.mp4?expires=1&sig=abc"',
    '#EXTINF:4.0,',
    'seg/0.ts?expires=1&sig=abc',
    '#EXTINF:4.0,',
    'seg/1.ts?expires=1&sig=def',
    '#EXT-X-ENDLIST',
    '',
  ].join('\n');

  it('finds segments and URI attributes in order', () => {
    const parsed = parsePlaylist(media);
    expect(parsed.references.map((r) => r.uri)).toEqual([
      'init.mp4?expires=1&sig=abc',
      'seg/0.ts?expires=1&sig=abc',
      'seg/1.ts?expires=1&sig=def',
    ]);
    expect(bestVariant(parsed)).toBeNull();
  });

  it('rewrites every reference to its local name and leaves no signature', () => {
    const text = rewritePlaylist(parsePlaylist(media), ['00001.mp4', '00002.ts', '00003.ts']);
    expect(text).not.toContain('sig=');
    expect(text).toContain('#EXT-X-MAP:URI="00001.mp4"');
    expect(text.split('\n')).toContain('00002.ts');
    expect(text.split('\n')).toContain('#EXT-X-ENDLIST');
  });

  it('picks the highest-bandwidth variant of a master playlist', () => {
    const master = [
      '#EXTM3U',
      '#EXT-X-STREAM-INF:BANDWIDTH=800000,RESOLUTION=640x360',
      'low.m3u8?sig=1',
      '#EXT-X-STREAM-INF:AVERAGE-BANDWIDTH=1,BANDWIDTH=2400000',
      'high.m3u8?sig=2',
    ].join('\n');
    const parsed = parsePlaylist(master);
    expect(parsed.references).toEqual([]);
    expect(bestVariant(parsed)).toBe('high.m3u8?sig=2');
  });
});
