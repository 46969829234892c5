/** studies rows. */
import { declaredKeys, extraFields, responseCountInDesc, type Study } from '../api/resources.ts';
import type { Row } from '../tables/index.ts';
import { extraJson, toIsoUtc } from './values.ts';

export function studyRow(study: Study): Row<'studies'> {
  return {
    study_id: study.id,
    link_id: study.link_id,
    title: study.title,
    created_at: toIsoUtc(study.created_at),
    desc: study.desc,
    listed_response_count: responseCountInDesc(study.desc),
    extra: extraJson(extraFields(study, declaredKeys.study)),
  };
}
