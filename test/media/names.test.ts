import { describe, expect, it } from 'vitest';
import { extensionFor, hlsFolder, mediaEntryName, safeSegment } from '../../src/media/names.ts';

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
    expect(name.length).toBeLessThan(250);
  });

  it('keeps unicode letters and marks a changed id with a hash', () => {
    expect(safeSegment('études_日本語')).toBe('études_日本語');
    const changed = safeSegment('études/日本語');
    expect(changed.startsWith('études_日本語~')).toBe(true);
  });

  it('keeps a plain ASCII segment exactly when it has no leading or trailing dot, fits 80 characters and is not a Windows name', () => {
    const alphabet = ['a', 'Z', '9', '.', '_', '-'];
    const values = [...alphabet];
    for (let length = 2; length <= 4; length++) {
      for (const value of values.filter((v) => v.length === length - 1)) {
        for (const c of alphabet) values.push(value + c);
      }
    }
    values.push('x'.repeat(80), 'x'.repeat(81), 'con', 'COM1', 'lpt9.txt', 'console', 'nul.', '.hidden');
    for (const value of values) {
      const kept =
        !value.startsWith('.') &&
        !value.endsWith('.') &&
        value.length <= 80 &&
        !/^(con|prn|aux|nul|com\d|lpt\d)(\..*)?$/i.test(value);
      const segment = safeSegment(value);
      if (kept) expect(segment).toBe(value);
      else expect(segment).toMatch(/~[0-9a-f]{16}$/);
    }
  });

  it('never gives two different ids the same segment', () => {
    const ids = [
      'a/b',
      'a\\b',
      'a:b',
      'a_b',
      'a b',
      '../x',
      '__x',
      '_.x',
      'x'.repeat(300),
      `${'x'.repeat(300)}y`,
    ];
    const segments = ids.map(safeSegment);
    expect(new Set(segments).size).toBe(ids.length);
    // An unchanged id can never look like a changed one: "~" only appears with the hash.
    expect(safeSegment('a_b~0123456789abcdef')).not.toBe('a_b~0123456789abcdef');
  });

  it('caps length', () => {
    expect(Array.from(safeSegment('é'.repeat(300))).length).toBeLessThanOrEqual(80 + 17);
  });

  it('refuses a turn that is not a positive integer', () => {
    expect(() => mediaEntryName('a', 'b', 0, 'audio', 'mp3')).toThrow(RangeError);
    expect(() => hlsFolder('a', 'b', 1.5)).toThrow(RangeError);
  });

  it('names the HLS folder', () => {
    expect(hlsFolder('../s', 'r', 2)).toMatch(/^___s~[0-9a-f]{16}\/r\/2-hls$/);
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
