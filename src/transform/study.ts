/** studies rows. */
import { declaredKeys, extraFields, type Study } from '../api/resources.ts';
import type { Row } from '../load/tables.ts';
import { extraJson, toIsoUtc } from './values.ts';

const responseCountSuffix = / \((\d+) Responses?\)$/;

/** The <n> of a desc shaped "<title> (<n> Responses)", or null when desc has another shape. */
export function listedResponseCount(desc: string): number | null {
  const match = responseCountSuffix.exec(desc);
  if (!match?.[1]) return null;
  const count = Number(match[1]);
  return Number.isSafeInteger(count) ? count : null;
}

export function studyRow(study: Study): Row<'studies'> {
  return {
    study_id: study.id,
    link_id: study.link_id,
    title: study.title,
    created_at: toIsoUtc(study.created_at),
    desc: study.desc,
    listed_response_count: listedResponseCount(study.desc),
    extra: extraJson(extraFields(study, declaredKeys.study)),
  };
}
