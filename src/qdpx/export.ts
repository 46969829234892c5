/**
 * `study-export qdpx`: each chosen study of an output (default: every study current/ holds) as
 * DIR/<name>.qdpx, <name> made from its link_id by the one encoding of ids to names
 * (src/names.ts). A recording too large to go inside stays in DIR/<name> media/.
 */
import { mkdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import packageJson from '../../package.json' with { type: 'json' };
import { ConfigError } from '../errors.ts';
import { appendHandoff } from '../ledger/index.ts';
import { studyFileNames } from '../names.ts';
import type { LinkageEntry } from '../privacy/index.ts';
import { type HandoffProfile, OutputReader, openHandoff } from '../reader/index.ts';
import type { S3Settings } from '../storage/index.ts';
import { openStorage } from '../storage/index.ts';
import { qdpxInput } from './from-output.ts';
import { type QdpxResult, writeQdpx } from './package.ts';
import type { QdpxWarning } from './types.ts';

export interface QdpxExportOptions {
  /** The output: out/<name> or s3://bucket/prefix/<name>. */
  output: string;
  /** Permanent ids or link_ids; empty: every study. */
  studies: readonly string[];
  /** The folder the .qdpx files go into. */
  to: string;
  s3?: S3Settings;
  /** The privacy profile the projects are made with, 'identified' (--identified) or 'unprofiled' (the default: no privacy: section). */
  profile?: HandoffProfile;
  /** Whether each study's linkage table is wanted (--linkage): made only then. */
  linkage?: boolean;
  /** Tests only: a smaller limit for recordings inside the package. */
  internalLimitBytes?: number;
  onStudy?: (done: QdpxStudyDone) => void;
}

export interface QdpxStudyDone extends QdpxResult {
  study_id: string;
  link_id: string;
  file: string;
  /** Every pseudonym in the project and what it stands for (with `linkage`; never in the project). */
  linkage: LinkageEntry[];
}

export const ORIGIN = `study-export ${packageJson.version}`;

export async function exportQdpx(options: QdpxExportOptions): Promise<QdpxStudyDone[]> {
  const reader = await OutputReader.open(options.output, options.s3 ?? {});
  const handoff = openHandoff(reader, options.profile ?? 'unprofiled');
  const chosen =
    options.studies.length === 0
      ? await reader.studies()
      : await Promise.all(options.studies.map((study) => reader.resolveStudy(study)));
  if (chosen.length === 0)
    throw new ConfigError(
      `${reader.location}: no study in its current/; give an output folder, out/<name> or s3://bucket/prefix/<name>, that a run has exported into`,
      { context: { file: reader.location } },
    );
  const unique = [...new Map(chosen.map((study) => [study.study_id, study])).values()];
  const names = studyFileNames(unique);
  const folder = resolve(options.to);
  await mkdir(folder, { recursive: true });
  const target = await openStorage(folder);
  const done: QdpxStudyDone[] = [];
  for (const study of unique) {
    const name = names.get(study.study_id) ?? study.study_id;
    const handed = await handoff.study(study.study_id);
    const { input, warnings } = await qdpxInput(handed);
    const where = join(folder, `${name}.qdpx`);
    // The storage writes it under a hidden name and renames it when closed; the writer aborts
    // it on failure: no half project is ever where a program would open it.
    const result = await writeQdpx(input, {
      origin: ORIGIN,
      output: await target.create(`${name}.qdpx`),
      where,
      externalFolder: join(folder, `${name} media`),
      ...(options.internalLimitBytes !== undefined ? { internalLimitBytes: options.internalLimitBytes } : {}),
    });
    // The ledger (handoffs/) records the project and the responses it holds, as it holds them.
    await appendHandoff(reader.storage, {
      command: 'qdpx',
      package: `${name}.qdpx`,
      location: where,
      studies: [{ study_id: study.study_id, link_id: study.link_id }],
      identified: handed.privacy.identified,
      responses: await handed.held(input.responses.map((response) => response.response.response_id)),
    });
    const all: QdpxWarning[] = [...warnings, ...result.warnings];
    const entry = {
      ...result,
      warnings: all,
      study_id: study.study_id,
      link_id: study.link_id,
      file: where,
      linkage: options.linkage ? await handed.linkage() : [],
    };
    done.push(entry);
    options.onStudy?.(entry);
  }
  return done;
}
