/** A JSON array split into its elements by one pass over its bytes, each parsed when taken. */
import { describe, expect, it } from 'vitest';
import { type JsonArrayElements, splitJsonArray } from '../../src/api/json-array.ts';

const split = (text: string) => splitJsonArray(Buffer.from(text, 'utf8'));

function values(elements: JsonArrayElements | null): unknown[] {
  if (!elements) throw new Error('not split');
  return Array.from({ length: elements.length }, (_, index) => {
    const element = elements.element(index);
    if (!element.ok) throw new Error(element.reason);
    return element.value;
  });
}

describe('splitJsonArray', () => {
  it('gives each element as JSON.parse gives it: strings holding brackets, commas, quotes and escapes; nesting; unicode; spaces', () => {
    const page = [
      { id: 'a', answers: { Q1: 'yes, [really] {no}', 'Q,2': '"quoted" \\ back\\slash ]' } },
      { id: 'b', list: [1, [2, [3, {}]], []], nothing: null, t: true, f: false, n: -1.5e3 },
      '回答 ✓ — émoji 🎉 \u2028 \\u0000',
      'ends in a backslash \\',
      '\\"',
      '',
      [],
      {},
      0,
    ];
    const compact = JSON.stringify(page);
    expect(values(split(compact))).toEqual(page);
    const spaced = ` \t[ ${page.map((value) => JSON.stringify(value)).join(' ,\t')} ]  `;
    expect(values(split(spaced))).toEqual(page);
  });

  it('finds the end of every string, short or long, whatever quotes and backslashes it holds and wherever', () => {
    // Every string of up to 12 characters from these three, as values and as keys: escaped
    // quotes and runs of backslashes land at each position, before and after the point where
    // the scan moves from single bytes to indexOf.
    const alphabet = ['a', '"', '\\'];
    const strings = [''];
    for (let length = 1; length <= 12; length++) {
      for (let k = 0; k < 40; k++) {
        strings.push(Array.from({ length }, (_, i) => alphabet[(k * 7 + i * i + length) % 3]).join(''));
      }
    }
    const page = strings.map((text, i) => ({ [text]: text, i, after: `${text}]},"` }));
    expect(values(split(JSON.stringify(page)))).toEqual(page);
    expect(split(JSON.stringify(page).replace(/"}]$/, '}]'))).toBeNull();
  });

  it('splits an empty array into no elements', () => {
    expect(split('[]')?.length).toBe(0);
    expect(split(' [  ] ')?.length).toBe(0);
  });

  it('leaves to JSON.parse of the whole text what is no well-formed array', () => {
    for (const text of [
      '{"id":"a"}',
      '"[1,2]"',
      'Service temporarily unavailable',
      '[1,2',
      '[{"a":1]}',
      '[{"a":"unterminated}]',
      '[1,2]]',
      '[1,2] trailing',
      '[1,,2]',
      '[1,]',
      '[,1]',
      '',
      '\uFEFF[1]',
      '[1,\n2]', // not one line: raw/ could not keep it as received
    ]) {
      expect(split(text), text).toBeNull();
    }
  });

  it('gives an element that is balanced but not JSON as its text and the reason, and the others as values', () => {
    const elements = split('[{"id":"a"}, {"id": tru}, {"id":"c"}]');
    expect(elements?.length).toBe(3);
    // bytes: the element's size as received, the blank before it included.
    expect(elements?.element(0)).toEqual({ ok: true, value: { id: 'a' }, bytes: 10 });
    const bad = elements?.element(1);
    expect(bad).toMatchObject({ ok: false, text: '{"id": tru}' });
    expect(bad?.ok === false && bad.reason).toMatch(/^not JSON/);
    expect(elements?.element(2)).toEqual({ ok: true, value: { id: 'c' }, bytes: 11 });
  });

  it('measures nesting with the array itself as one level', () => {
    const elements = split('[{"a":[[1]]}, 2]');
    expect(elements?.nestsDeeperThan(3)).toBe(true);
    expect(elements?.nestsDeeperThan(4)).toBe(false);
    const deep = `[${'['.repeat(100_000)}${']'.repeat(100_000)}]`;
    expect(split(deep)?.nestsDeeperThan(256)).toBe(true);
  });
});

describe('keys repeated in a list item’s attributes and answers', () => {
  const repeated = (text: string) => {
    const elements = split(text);
    if (!elements) throw new Error('not split');
    return Array.from({ length: elements.length }, (_, index) => {
      const element = elements.element(index);
      if (!element.ok) throw new Error(element.reason);
      return element.repeatedKeys ?? [];
    });
  };

  it('names a key an attributes object holds twice, alike or not, which JSON.parse alone hides', () => {
    const page =
      '[{"id":"a","attributes":{"utm":"mail","id":"1","utm":"web"}},' +
      ' {"id":"b","attributes" : { "utm" : "x" , "ut\\u006d":"x", "ответ": "1", "ответ": "1", "ответ": "1" }},' +
      '{"id":"c","attributes":{"utm":"x"},"note":"attributes","x":{"attributes":{"k":"1","k":"2"}}}]';
    expect(repeated(page)).toEqual([
      [{ member: 'attributes', key: 'utm', copies: 2, alike: false }],
      [
        { member: 'attributes', key: 'utm', copies: 2, alike: true },
        { member: 'attributes', key: 'ответ', copies: 3, alike: true },
      ],
      // Only the item's own attributes: a nested object of that name, or the word as a value, is not one.
      [],
    ]);
  });

  it('checks the answers object only when the item has no answers_array (its keys are then the answer ids)', () => {
    const page =
      '[{"id":"a","answers":{"Q":"1","Q":"2"}},' +
      '{"id":"b","answers":{"Q":"1","Q":"2"},"answers_array":[]},' +
      '{"id":"c","answers":{"Summary":"s","Q {1}, [2]":"a, \\"b\\"","Q {1}, [2]":"a, \\"b\\""},"attributes":{}}]';
    expect(repeated(page)).toEqual([
      [{ member: 'answers', key: 'Q', copies: 2, alike: false }],
      [],
      [{ member: 'answers', key: 'Q {1}, [2]', copies: 2, alike: true }],
    ]);
  });
});
