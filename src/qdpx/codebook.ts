/**
 * The discussion guide as a code book: a code per question slot, named by its position and
 * text ("Q3 What do you like…"), the slots of a concept-specific question grouped under a code
 * for their concept, and a code for the service's summary.
 *
 * The service gives a concept only as an id, so its group is named as the report and the viewer
 * name it ("Concept A" for "concept-a": concept-name.ts), or "Concept <id>" where two of a
 * study's ids would get one name. Code names are unique across the whole book (QualCoder keeps
 * one code per name and silently drops the codings of a second): positions are unique within a
 * study, so are "Q<n> …" names, and the other names have prefixes of their own.
 */

import { conceptName } from '../concept-name.ts';
import { questionKey } from '../output/wide-rows.ts';
import type { Row } from '../tables/index.ts';
import { guidOf } from './guids.ts';
import { displayName, element, tag } from './xml.ts';

export interface Code {
  guid: string;
  name: string;
  description: string;
}

export interface CodeBook {
  /** The code of an answer's question slot. */
  codeOf(answer: Row<'answers'>): Code;
  /** The code of the service's summary. */
  summary: Code;
  /** <CodeBook>…</CodeBook> */
  xml(): string;
}

/** Longest question text kept in a code's name (the whole text is in its description). */
const NAME_CHARS = 120;

export function codeBook(studyId: string, questions: readonly Row<'questions'>[]): CodeBook {
  const slots = new Map<string, { row: Row<'questions'>; code: Code }>();
  const add = (row: Row<'questions'>) => {
    const key = questionKey(row.discussion_guide_question_id, row.concept_id);
    const text = displayName(row.question, '(no question text)');
    const short = [...text].length > NAME_CHARS ? `${[...text].slice(0, NAME_CHARS - 1).join('')}…` : text;
    const code: Code = {
      guid: guidOf('code', studyId, row.discussion_guide_question_id, row.concept_id),
      name: `Q${row.position} ${short}`,
      description: [
        row.question,
        `Discussion guide question ${row.discussion_guide_question_id || '(none)'}` +
          (row.concept_id === null ? ', not concept-specific.' : `, concept ${row.concept_id}.`),
      ].join('\n'),
    };
    const slot = { row, code };
    slots.set(key, slot);
    return slot;
  };
  for (const row of [...questions].sort((a, b) => a.position - b.position)) add(row);
  const summary: Code = {
    guid: guidOf('summary-code', studyId),
    name: 'Summary',
    description: "The service's summary of the whole conversation (not the respondent's words).",
  };
  return {
    summary,
    codeOf(answer) {
      const key = questionKey(answer.discussion_guide_question_id ?? '', answer.concept_id);
      // An answer of a slot the questions table lacks still gets a code of its own, after the rest.
      const slot =
        slots.get(key) ??
        add({
          study_id: studyId,
          discussion_guide_question_id: answer.discussion_guide_question_id ?? '',
          concept_id: answer.concept_id,
          question: answer.question,
          position: slots.size + 1,
        });
      return slot.code;
    },
    xml: () => codeBookXml(studyId, [...slots.values()], summary),
  };
}

function codeBookXml(studyId: string, slots: { row: Row<'questions'>; code: Code }[], summary: Code): string {
  // In slot order; a concept's group sits where its first slot would.
  const entries: Array<{ code: Code } | { concept: string; members: Code[] }> = [];
  const concepts = new Map<string, Code[]>();
  for (const { row, code } of slots) {
    if (row.concept_id === null) {
      entries.push({ code });
      continue;
    }
    let members = concepts.get(row.concept_id);
    if (!members) {
      members = [];
      concepts.set(row.concept_id, members);
      entries.push({ concept: row.concept_id, members });
    }
    members.push(code);
  }
  const groupName = conceptGroupNames(
    entries.flatMap((entry) => ('concept' in entry ? [entry.concept] : [])),
  );
  const codes = entries.map((entry) => {
    if ('code' in entry) return codeXml(entry.code, true);
    const group: Code = {
      guid: guidOf('concept', studyId, entry.concept),
      name: groupName(entry.concept),
      description: `The question slots asked about concept ${entry.concept}.`,
    };
    return codeXml(group, false, entry.members.map((code) => codeXml(code, true)).join(''));
  });
  return `<CodeBook><Codes>${codes.join('')}${codeXml(summary, true)}</Codes></CodeBook>`;
}

/** Each concept's group name: its name for people, else (two ids, one name) its id. */
function conceptGroupNames(conceptIds: readonly string[]): (conceptId: string) => string {
  const named = (id: string) => {
    const name = conceptName(id);
    return `${name.charAt(0).toUpperCase()}${name.slice(1)}`;
  };
  const uses = new Map<string, number>();
  for (const id of conceptIds) uses.set(named(id), (uses.get(named(id)) ?? 0) + 1);
  return (id) => ((uses.get(named(id)) ?? 0) > 1 ? `Concept ${displayName(id, '(empty id)')}` : named(id));
}

function codeXml(code: Code, codable: boolean, children = ''): string {
  return (
    tag('Code', { guid: code.guid, name: code.name, isCodable: codable }) +
    element('Description', code.description) +
    children +
    '</Code>'
  );
}
