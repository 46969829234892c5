import { describe, expect, it } from 'vitest';
import { extensionFor, hlsFolder, mediaEntryName } from '../../src/media/names.ts';
import { nameOf } from '../../src/names.ts';

/** What any unzipper must be able to extract without escaping its folder. */
function expectSafeEntry(name: string): void {
  expect(name.startsWith('/')).toBe(false);
  expect(name).not.toContain('\\');
  expect(name).not.toContain(':');
  expect(name).not.toMatch(/[\u0000-\u001f\u007f]/);
  for (const part of name.split('/')) {
    expect(part).not.toBe('..');
    expect(part).not.toBe('.');
    expect(part).not.toBe('');
    expect(part.startsWith('.')).toBe(false);
  }
}

describe('mediaEntryName', () => {
  it('keeps ordinary ids as they are', () => {
    expect(mediaEntryName('study-1', '7f3c0c1e-0000-4000-8000-000000000001', 3, 'audio', 'mp3')).toBe(
      'study-1/7f3c0c1e-0000-4000-8000-000000000001/3-audio.mp3',
    );
  });

  it.each([
    ['../../etc/passwd'],
    ['/abs'],
    ['a\\b'],
    ['..'],
    ['.'],
    ['.hidden'],
    ['tab\there\nnewline\u0000nul\u007f'],
    ['C:\\Windows'],
    ['con'],
    ['trailing.'],
    [''],
    ['x'.repeat(300)],
    ['a/b?c=d#e'],
  ])('makes %j safe in both id positions', (hostile) => {
    const name = mediaEntryName(hostile, hostile, 1, 'video', 'mp4');
    expectSafeEntry(name);
    expect(name.split('/')).toHaveLength(3);
    expect(name.endsWith('/1-video.mp4')).toBe(true);
    for (const part of name.split('/')) expect(Buffer.byteLength(part)).toBeLessThanOrEqual(120);
  });

  it('names each id by the one encoding of ids (src/names.ts)', () => {
    expect(mediaEntryName('Études/日本', '.', 2, 'audio', 'mp3')).toBe(
      `${nameOf('Études/日本')}/~2E/2-audio.mp3`,
    );
  });

  it('refuses a turn that is not a positive integer', () => {
    expect(() => mediaEntryName('a', 'b', 0, 'audio', 'mp3')).toThrow(RangeError);
    expect(() => hlsFolder('a', 'b', 1.5)).toThrow(RangeError);
  });

  it('names the HLS folder', () => {
    expect(hlsFolder('../s', 'r', 2)).toBe('~2E.~2Fs/r/2-hls');
  });
});

describe('extensionFor', () => {
  it.each([
    ['audio/mpeg', 'mp3'],
    ['audio/mp4', 'm4a'],
    ['audio/wav', 'wav'],
    ['audio/ogg', 'ogg'],
    ['audio/webm', 'webm'],
    ['video/mp4', 'mp4'],
    ['application/vnd.apple.mpegurl', 'm3u8'],
    ['application/x-mpegURL', 'm3u8'],
    ['video/MP2T', 'ts'],
    ['audio/mpeg; charset=binary', 'mp3'],
    ['text/html', 'bin'],
    [null, 'bin'],
  ])('%s -> %s', (type, ext) => {
    expect(extensionFor(type)).toBe(ext);
  });
});
