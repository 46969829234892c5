/**
 * Which studies a run covers, and the dry run's plan. The study list is read before
 * anything is written, so a wrong key or an unreachable host leaves no trace on disk.
 */
import { join } from 'node:path';
import type { ApiClient } from '../api/client.ts';
import { responseCountInDesc, type Study } from '../api/resources.ts';
import type { PipelineConfig } from '../config/schema.ts';
import { listStudies, selectStudies } from '../extract/index.ts';
import type { RawRecord, Reject, Warning } from '../records.ts';
import { inShard } from './shard.ts';
import { effectiveSince, type State } from './state.ts';
import type { DryRunPlan, RunOptions } from './types.ts';

/** The selected studies, and what listing them produced, to be recorded once a run exists. */
export interface StudyListing {
  studies: Study[];
  raw: RawRecord[];
  rejects: Reject[];
  warnings: Warning[];
}

export async function listSelectedStudies(
  client: ApiClient,
  config: PipelineConfig,
  state: State,
  options: RunOptions,
): Promise<StudyListing> {
  const listing: StudyListing = { studies: [], raw: [], rejects: [], warnings: [] };
  const all = await listStudies(client, {
    raw: { write: (record) => listing.raw.push(record) },
    rejects: { write: (reject) => listing.rejects.push(reject) },
    warn: (warning) => listing.warnings.push(warning),
  });
  const known = new Map(Object.entries(state.studies).map(([id, study]) => [id, study.link_id]));
  const only = options.studies && options.studies.length > 0 ? options.studies : undefined;
  listing.studies = selectStudies(
    all,
    { include: config.studies.include, exclude: config.studies.exclude, only },
    known,
  ).filter((study) => inShard(study.id, options.shard));
  return listing;
}

/** updated_since for one study of this run. */
export function sinceFor(
  study: Study,
  state: State,
  options: RunOptions,
  config: PipelineConfig,
): string | null {
  return effectiveSince(state.studies[study.id], {
    ...options,
    incremental: config.incremental,
    media: config.media.enabled,
  });
}

export function dryRunPlan(
  studies: Study[],
  state: State,
  options: RunOptions,
  config: PipelineConfig,
): DryRunPlan {
  return {
    base_url: config.source.base_url,
    studies: studies.map((study) => ({
      study_id: study.id,
      link_id: study.link_id,
      title: study.title,
      expected_responses: responseCountInDesc(study.desc),
      since: sinceFor(study, state, options, config),
    })),
    media: config.media.enabled,
    formats: config.output.formats,
    out: join(config.output.dir, config.name),
    shard: options.shard ?? null,
  };
}

/** The details stage's expected total: desc counts for full exports, unknown when incremental. */
export function expectedResponses(
  studies: Study[],
  state: State,
  options: RunOptions,
  config: PipelineConfig,
): number | undefined {
  let total = 0;
  for (const study of studies) {
    if (sinceFor(study, state, options, config) !== null) return undefined;
    total += responseCountInDesc(study.desc) ?? 0;
  }
  return total;
}
