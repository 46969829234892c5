/**
 * Question slots of a study: one per (discussion guide question, concept). Responses
 * reveal them one at a time, so a small per-study registry numbers them in order of
 * first appearance.
 */
import type { Row } from '../tables/index.ts';

export interface QuestionCandidate {
  study_id: string;
  discussion_guide_question_id: string;
  concept_id: string | null;
  question: string;
}

export class QuestionRegistry {
  readonly #slots = new Map<string, Row<'questions'>>();

  /** Registers the candidates; returns only the slots not seen before, numbered from 1. */
  add(candidates: readonly QuestionCandidate[]): Row<'questions'>[] {
    const added: Row<'questions'>[] = [];
    for (const candidate of candidates) {
      const key = JSON.stringify([
        candidate.study_id,
        candidate.discussion_guide_question_id,
        candidate.concept_id,
      ]);
      if (this.#slots.has(key)) continue;
      const row: Row<'questions'> = {
        study_id: candidate.study_id,
        discussion_guide_question_id: candidate.discussion_guide_question_id,
        concept_id: candidate.concept_id,
        question: candidate.question,
        position: this.#slots.size + 1,
      };
      this.#slots.set(key, row);
      added.push(row);
    }
    return added;
  }

  /** Every slot registered so far, by position. */
  all(): Row<'questions'>[] {
    return [...this.#slots.values()];
  }
}
