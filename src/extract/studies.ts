/**
 * The study list (spec 4.1) and which studies a run exports.
 *
 * Selection follows the permanent id: a pattern matches a study by its current link_id, its
 * id, or the link_id the previous run knew it by (its state), so a rename between runs does
 * not lose a study.
 */
import type { ApiClient } from '../api/client.ts';
import { checked, describeIssues, Study } from '../api/resources.ts';
import { ConfigError, PayloadError } from '../errors.ts';
import { archiveRaw, type ExtractSinks, type Reject, rejectRecord } from '../records.ts';
import { globToRegExp } from '../util/glob.ts';

export { globToRegExp };

import { sameValue } from './keys.ts';
import { jsonText, nestsDeeperThan, tooDeepReason } from './nesting.ts';

/** Lists the studies, archives the payload raw, and returns the valid ones (invalid ones go to rejects). */
export async function listStudies(client: ApiClient, sinks: ExtractSinks): Promise<Study[]> {
  const fetched = await client.listStudies();
  const tooDeep = nestsDeeperThan(fetched.payload);
  const received = tooDeep ? { ...fetched, payload: jsonText(fetched.payload) } : fetched;
  archiveRaw(sinks.raw, 'list_surveys', received);
  if (!Array.isArray(fetched.payload)) {
    throw new PayloadError(`list_surveys: expected a JSON array of studies from ${fetched.url}`, {
      context: { operation: 'list_surveys', url: fetched.url, status: fetched.status },
    });
  }
  const studies: Study[] = [];
  /** Each study id's first listing, as received. */
  const seen = new Map<string, unknown>();
  for (const [index, raw] of fetched.payload.entries()) {
    if (tooDeep && nestsDeeperThan(raw)) {
      sinks.rejects.write(studyReject(jsonText(raw), `[${index}] ${tooDeepReason}`));
      continue;
    }
    const parsed = checked(Study, raw);
    if (!parsed.success) {
      sinks.rejects.write(studyReject(raw, `[${index}] ${describeIssues(parsed.error)}`));
      continue;
    }
    if (seen.has(parsed.data.id)) {
      // Listed twice alike: one study, kept once. Differently: no rule says which is the study.
      if (sameValue(seen.get(parsed.data.id), raw)) {
        sinks.warn({
          code: 'duplicate_study',
          message: `the study list names study "${parsed.data.id}" (link_id "${parsed.data.link_id}") twice, both alike; kept once`,
          study_id: parsed.data.id,
          link_id: parsed.data.link_id,
        });
      } else {
        sinks.rejects.write(
          studyReject(raw, `[${index}] id: study "${parsed.data.id}" listed twice, with different content`),
        );
      }
      continue;
    }
    seen.set(parsed.data.id, raw);
    studies.push(parsed.data);
  }
  return studies;
}

function studyReject(raw: unknown, reason: string): Reject {
  const { id, link_id } = raw !== null && typeof raw === 'object' ? (raw as Record<string, unknown>) : {};
  return rejectRecord('list_surveys', reason, raw, {
    ...(typeof id === 'string' ? { study_id: id } : {}),
    ...(typeof link_id === 'string' ? { link_id } : {}),
  });
}

export interface StudySelection {
  /** link_id globs or permanent ids. */
  include: string[];
  exclude: string[];
  /** --study: exact ids or link_ids; replaces include and exclude (naming a study is explicit). */
  only?: string[];
}

/**
 * The studies to export, in list order. `known` maps permanent study id to the link_id the
 * last run used (the state); an --study naming nothing is a ConfigError.
 */
export function selectStudies(
  studies: Study[],
  selection: StudySelection,
  known: Map<string, string> = new Map(),
): Study[] {
  const namesOf = (study: Study): string[] => {
    const names = [study.link_id, study.id];
    const previous = known.get(study.id);
    if (previous !== undefined && previous !== study.link_id) names.push(previous);
    return names;
  };
  if (selection.only !== undefined && selection.only.length > 0) {
    return selectOnly(studies, selection.only, namesOf);
  }
  const include = selection.include.map(globToRegExp);
  const exclude = selection.exclude.map(globToRegExp);
  const matches = (patterns: RegExp[], study: Study) =>
    patterns.some((pattern) => namesOf(study).some((name) => pattern.test(name)));
  return studies.filter((study) => matches(include, study) && !matches(exclude, study));
}

function selectOnly(studies: Study[], only: string[], namesOf: (study: Study) => string[]): Study[] {
  const wanted = new Set(only);
  const found = new Set<string>();
  const selected = studies.filter((study) => {
    const hits = namesOf(study).filter((name) => wanted.has(name));
    for (const hit of hits) found.add(hit);
    return hits.length > 0;
  });
  const missing = only.filter((name) => !found.has(name));
  if (missing.length > 0) {
    throw new ConfigError(
      `--study ${missing.map((name) => JSON.stringify(name)).join(', ')} matches no study id or link_id. ` +
        'A link_id may have been renamed: run `study-export studies` to list the studies, or name the permanent id',
    );
  }
  return selected;
}
