/**
 * Words found and marked for the viewer's search, and concepts named from their ids: folded
 * comparison that marks the text as written, snippets cut at spaces (or between characters
 * where a script has none), and respondents' markup only ever text.
 */
import { describe, expect, it } from 'vitest';
import { conceptName, questionLabel } from '../../src/concept-name.ts';
import { findTerms, markedHtml, queryTerms, snippetHtml } from '../../src/view/highlight.ts';

describe('concept names', () => {
  it('are made from the id alone', () => {
    expect(conceptName('concept-a')).toBe('concept A');
    expect(conceptName('Concept_12')).toBe('concept 12');
    expect(conceptName('conceptb')).toBe('concept B');
    expect(conceptName('3f2a9c1e-1111-4222-8333-444455556666')).toBe('concept 3f2a9c1e');
    expect(conceptName('packaging-v2')).toBe('concept packaging-v2');
    expect(questionLabel('Like it?', 'concept-b')).toBe('Like it? (concept B)');
    expect(questionLabel('Anything else?', null)).toBe('Anything else?');
  });
});

describe('search words', () => {
  it('are the words of a query, a quoted phrase as one, folded and each once', () => {
    expect(queryTerms('  PRICE confused "second  screen" price ')).toEqual([
      'price',
      'confused',
      'second screen',
    ]);
    expect(queryTerms('   ')).toEqual([]);
  });

  it('are found without case or accents and marked in the text as written', () => {
    const text = 'Cafe\u0301 au lait, CAFÉ noir';
    const ranges = findTerms(text, queryTerms('cafe'));
    expect(ranges.map(([s, e]) => text.slice(s, e))).toEqual(['Cafe\u0301', 'CAFÉ']);
    expect(markedHtml('<b>price</b>', findTerms('<b>price</b>', ['price']))).toBe(
      '&lt;b&gt;<mark>price</mark>&lt;/b&gt;',
    );
  });

  it('make snippets cut at spaces, or between characters in a script without them', () => {
    const words = Array.from({ length: 200 }, (_, i) => `word${i}`).join(' ');
    const html = snippetHtml(words, findTerms(words, ['word100']));
    const text = html.replace(/<\/?mark>/g, '');
    expect(text).toMatch(/^… word\d+ .* word\d+ …$/);
    expect(html).toContain('<mark>word100</mark>');
    const cjk = '界面很简洁😀'.repeat(100);
    const piece = snippetHtml(cjk, []).replace(/ …$/, '');
    // Never half of a surrogate pair.
    expect(piece).toBe(Array.from(piece).join(''));
    expect(/[\ud800-\udbff]$/.test(piece)).toBe(false);
  });
});
