import { describe, expect, it } from 'vitest';
import {
  attributeVariableName,
  isVariableName,
  slotVariableName,
  uniqueNames,
} from '../../../src/output/labelled/names.ts';
import { wideVariableNames } from '../../../src/output/labelled/wide.ts';
import type { WideColumn } from '../../../src/records.ts';

const slot = (questionId: string, conceptId: string | null, header = 'Q?'): WideColumn => ({
  key: JSON.stringify([questionId, conceptId]),
  header,
  of: 'question',
});

describe('variable names', () => {
  it('names a slot of plain ids from them, a concept after two underscores', () => {
    expect(slotVariableName('dg-3', null)).toBe('q_dg_3');
    expect(slotVariableName('dg-3', 'concept-a')).toBe('q_dg_3__concept_a');
  });

  it('names any other slot from what can be kept of its ids and a hash of them, valid in both packages', () => {
    const odd = ['Q 7/É', 'dg_3', 'DG-3', '3', '', `${'long-id-'.repeat(10)}end`, 'مرحبا', 'a--b'];
    const names = odd.map((id) => slotVariableName(id, null));
    for (const name of names) {
      expect(isVariableName(name), name).toBe(true);
      expect(name.length).toBeLessThanOrEqual(32);
    }
    expect(new Set(names.map((n) => n.toLowerCase())).size).toBe(odd.length);
    // dg_3 and DG-3 would both be q_dg_3 if named plainly: neither takes dg-3's name.
    expect(names).not.toContain('q_dg_3');
    expect(slotVariableName('dg_3', null)).toMatch(/^q_dg_3_[0-9a-f]{6}$/);
  });

  it('names attributes with a_, snake_case keys plainly', () => {
    expect(attributeVariableName('utm_source')).toBe('a_utm_source');
    expect(attributeVariableName('weird key!')).toMatch(/^a_weird_key_[0-9a-f]{6}$/);
  });

  it('derives names from the slot, not its position or text: the same in every run', () => {
    const first = wideVariableNames([slot('dg-1', null, 'How?'), slot('dg-2', null, 'Why?')]);
    const reworded = wideVariableNames([
      slot('dg-0', null, 'New first question'),
      slot('dg-2', null, 'Why, really?'),
      slot('dg-1', null, 'How, then?'),
    ]);
    expect(first.slice(-2)).toEqual(['q_dg_1', 'q_dg_2']);
    expect(reworded.slice(-3)).toEqual(['q_dg_0', 'q_dg_2', 'q_dg_1']);
    expect(first.slice(0, 7)).toEqual([
      'response_id',
      'response_number',
      'created_at',
      'updated_at',
      'status',
      'modality',
      'summary',
    ]);
  });

  it('keeps names unique ignoring case, earlier names first', () => {
    expect(uniqueNames(['a', 'A', 'a_2', 'b'])).toEqual(['a', 'A_2', 'a_2_2', 'b']);
    const long = 'x'.repeat(32);
    expect(uniqueNames([long, long])).toEqual([long, `${'x'.repeat(30)}_2`]);
  });
});
