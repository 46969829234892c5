import { describe, expect, it } from 'vitest';
import {
  idOf,
  MAX_NAME_BYTES,
  nameOf,
  partitionValueOf,
  studyFileName,
  studyFileNames,
} from '../src/names.ts';

/** What every OS, unzipper and object store accepts as one path segment. */
function expectSafeName(name: string, id: string): void {
  const where = JSON.stringify(id).slice(0, 60);
  // A partition value is checked without its folder's "study_id=".
  const value = name.replace(/^study_id=/, '');
  expect(value, where).toMatch(/^[a-z0-9_.%A-F~-]+$/);
  // "%X%" reads as a Windows variable to some tools (the Frictionless library refuses the path).
  if (value === name) expect(name, where).not.toContain('%');
  expect(value, where).not.toMatch(/^\.|\.$/);
  expect(value, where).not.toMatch(/^(con|prn|aux|nul|com\d|lpt\d)(\.|$)/i);
  expect(Buffer.byteLength(value), where).toBeLessThanOrEqual(MAX_NAME_BYTES);
}

/** Ids a hostile service could send: case variants, separators, dots, unicode, lookalikes. */
function hostileIds(): string[] {
  const ids = new Set<string>([
    '6f1c2a9e-8b7d-4c3e-9a1f-2b3c4d5e6f70',
    '6F1C2A9E-8B7D-4C3E-9A1F-2B3C4D5E6F70',
    'x/y',
    // The name the previous rule gave "x/y": a real id can look like a changed name.
    'x_y-bd3c9047',
    'col/one',
    'col_one-74993218',
    'x%2Fy',
    'x%2fy',
    '%',
    '%25',
    '',
    '.',
    '..',
    '...',
    '.hidden',
    'trailing.',
    'con',
    'CON',
    'Con.txt',
    'com1',
    'lpt9.log',
    'console',
    'a b',
    'a\tb',
    'a\\b',
    'a:b',
    'a~b',
    'a~0123456789abcdef',
    'café',
    'cafe\u0301',
    'Café',
    'ß',
    'ẞ',
    '\ud800',
    '\ufffd',
    '𝒜',
    '研'.repeat(200),
    'x'.repeat(MAX_NAME_BYTES),
    'x'.repeat(MAX_NAME_BYTES + 1),
    'x'.repeat(500),
    `${'x'.repeat(500)}y`,
  ]);
  for (const a of ['a', 'A', '.', '/', '%', '~', '_', '-', 'é', 'É']) {
    for (const b of ['a', 'A', '.', '/', '%', '~', '_', '-', 'é', 'É']) ids.add(`${a}${b}`);
  }
  return [...ids];
}

describe('nameOf', () => {
  it('keeps plain lower-case ids, uuids among them, as they are', () => {
    for (const id of [
      '6f1c2a9e-8b7d-4c3e-9a1f-2b3c4d5e6f70',
      'coffee-habits_2026.v2',
      'a',
      '0',
      'x'.repeat(120),
    ]) {
      expect(nameOf(id)).toBe(id);
    }
  });

  it('escapes everything else, with "%" in partition values as Hive readers decode them', () => {
    const cases: [string, string][] = [
      ['x/y', '~2Fy'],
      ['ABC', '~41~42~43'],
      ['.', '~2E'],
      ['..', '~2E~2E'],
      ['a.', 'a~2E'],
      ['con', '~63on'],
      ['con.txt', '~63on.txt'],
      ['café', 'caf~C3~A9'],
      ['%', '~25'],
      ['~', '~7E'],
      ['', '~'],
    ];
    for (const [id, name] of cases) {
      expect(nameOf(id), id).toBe(id === 'x/y' ? `x${name}` : name);
      expect(partitionValueOf(id), id).toBe((id === 'x/y' ? `x${name}` : name).replaceAll('~', '%'));
    }
  });

  it('gives every id a safe name, its own, also on a case-insensitive file system', () => {
    const ids = hostileIds();
    for (const encode of [nameOf, (id: string) => `study_id=${partitionValueOf(id)}`]) {
      const names = ids.map(encode);
      ids.forEach((id, i) => {
        expectSafeName(names[i] as string, id);
      });
      expect(new Set(names).size).toBe(ids.length);
      expect(new Set(names.map((name) => name.toLowerCase())).size).toBe(ids.length);
    }
  });

  it('is read back as the exact id, except for a hashed long name', () => {
    for (const id of hostileIds()) {
      const name = nameOf(id);
      if (name.includes('~~')) continue;
      expect(idOf(name), JSON.stringify(id)).toBe(id);
      const value = partitionValueOf(id);
      if (!value.includes('~')) expect(idOf(value, '%'), JSON.stringify(id)).toBe(id);
    }
  });

  it('names a long id by its first part and a hash that no short id can carry', () => {
    const long = 'x'.repeat(500);
    const name = nameOf(long);
    expect(name).toMatch(/^x+~~[0-9a-f]{16}$/);
    expect(partitionValueOf(long)).toMatch(/^x+~[0-9a-f]{16}$/);
    expect(Buffer.byteLength(name)).toBeLessThanOrEqual(MAX_NAME_BYTES);
    // An escape's mark is followed by hex digits, so the same text as an id gets another name.
    expect(nameOf(name)).not.toBe(name);
    expect(partitionValueOf(partitionValueOf(long))).not.toBe(partitionValueOf(long));
    // The kept part is cut between characters: it still decodes.
    const cjk = nameOf('研'.repeat(200));
    expect(idOf(cjk.slice(0, cjk.indexOf('~~')))).toMatch(/^研+$/);
  });
});

describe('studyFileNames', () => {
  it('names a study by its link_id, and by both ids where two studies of the run share one', () => {
    const names = studyFileNames([
      { study_id: 's1', link_id: 'shared' },
      { study_id: 'S1', link_id: 'shared' },
      { study_id: 's3', link_id: 'col/one' },
      { study_id: 's4', link_id: 'col_one-74993218' },
    ]);
    expect([...names.values()]).toEqual(['shared~_s1', 'shared~_~531', 'col~2Fone', 'col_one-74993218']);
    expect(new Set([...names.values()].map((name) => name.toLowerCase())).size).toBe(4);
    // A pair's name is never a single id's: "~_" appears in no name of one id.
    expect(studyFileName({ study_id: 's1', link_id: 'shared' }, false)).toBe('shared');
    for (const id of hostileIds()) expect(nameOf(id)).not.toContain('~_');
  });
});
