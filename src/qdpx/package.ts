/**
 * A .qdpx: a zip holding project.qde and sources/, written by the project's own zip writer
 * (src/media/archive.ts), stored entries, zip64 where sizes need it. Each response's text
 * sources go in as soon as it is planned; each recording is streamed from where the output
 * keeps it (a run's media.zip) into the package chunk by chunk, so no recording is ever held
 * whole and memory does not grow with a study's video. project.qde comes last, once every
 * response has added its codes and variables.
 *
 * A recording larger than the standard's limit for files inside a package stays outside it:
 * written into a folder beside the .qdpx, which Project@basePath names, its source's path
 * relative to that folder, and a warning says so.
 */
import { createWriteStream } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { type ZipOutput, ZipWriter } from '../output/codecs/zip-writer.ts';
import { codeBook } from './codebook.ts';
import { guidOf } from './guids.ts';
import {
  type PlanContext,
  PROJECT_FILE,
  planResponse,
  projectHead,
  projectTail,
  SOURCES_FOLDER,
} from './project.ts';
import type { QdpxStudy, QdpxWarning } from './types.ts';
import { Variables } from './variables.ts';
import { UniqueNames } from './xml.ts';

/**
 * REFI-QDA 1.5 keeps files of 2 GB or more out of a package (many zip readers in QDA programs
 * stop at 32-bit sizes); such a recording is referenced by a relative path instead.
 */
export const INTERNAL_FILE_LIMIT = 2 ** 31 - 1;

export interface QdpxOptions {
  /** Project@origin: the program and its version. */
  origin: string;
  /** Where the .qdpx goes (and a name for errors). */
  output: ZipOutput;
  where: string;
  /** The folder beside the .qdpx for recordings over the limit (made only when needed). */
  externalFolder: string;
  /** Largest recording kept inside; INTERNAL_FILE_LIMIT unless a test says otherwise. */
  internalLimitBytes?: number;
  /** When the project was made (xsd:dateTime). */
  exportedAt?: string;
}

export interface QdpxResult {
  responses: number;
  codings: number;
  recordings: number;
  /** Recordings left outside the package (over the limit). */
  external: number;
  bytes: number;
  warnings: QdpxWarning[];
}

export async function writeQdpx(input: QdpxStudy, options: QdpxOptions): Promise<QdpxResult> {
  const studyId = input.study.study_id;
  const limit = options.internalLimitBytes ?? INTERNAL_FILE_LIMIT;
  const zip = new ZipWriter(options.where, options.output);
  const context: PlanContext = {
    study: input.study,
    codes: codeBook(studyId, input.questions),
    variables: new Variables(studyId),
    caseNames: new UniqueNames(),
    sourceNames: new UniqueNames(),
    userGuid: guidOf('user', 'study-export'),
    fitsInside: (bytes) => bytes <= limit,
  };
  const cases: Buffer[] = [];
  const sources: Buffer[] = [];
  const warnings: QdpxWarning[] = [];
  const result = { responses: 0, codings: 0, recordings: 0, external: 0 };
  try {
    for (const item of input.responses) {
      const planned = planResponse(context, item);
      for (const file of planned.internal) {
        const entry = `${SOURCES_FOLDER}/${file.file}`;
        if (file.text !== undefined)
          await zip.add(entry, { kind: 'memory', data: Buffer.from(file.text, 'utf8') });
        else if (file.recording) {
          const recording = file.recording;
          await zip.add(entry, { kind: 'stream', size: recording.bytes, open: () => recording.open() });
        }
      }
      for (const { recording, file } of planned.external) {
        await mkdir(options.externalFolder, { recursive: true });
        await pipeline(
          Readable.from(await recording.open()),
          createWriteStream(join(options.externalFolder, file)),
        );
        warnings.push({
          study_id: studyId,
          response_id: item.response.response_id,
          message: `${planned.caseName}'s ${recording.kind} of turn ${recording.turn} is ${recording.bytes} bytes, over the ${limit}-byte limit for files inside a REFI-QDA package: it is ${join(options.externalFolder, file)}, keep it beside the .qdpx`,
        });
      }
      cases.push(Buffer.from(planned.caseXml, 'utf8'));
      sources.push(Buffer.from(planned.sourcesXml, 'utf8'));
      result.responses += 1;
      result.codings += planned.conversation.passages.length;
      result.recordings += item.recordings.length;
      result.external += planned.external.length;
    }
    const parts = {
      study: input.study,
      privacy: input.privacy,
      origin: options.origin,
      userGuid: context.userGuid,
      codes: context.codes,
      variables: context.variables,
      exportedAt: options.exportedAt ?? new Date().toISOString(),
      ...(result.external > 0 ? { basePath: `${resolve(options.externalFolder)}/` } : {}),
    };
    const document = [
      Buffer.from(projectHead(parts), 'utf8'),
      ...wrapped('Cases', cases),
      ...wrapped('Sources', sources),
      Buffer.from(projectTail(parts), 'utf8'),
    ];
    const size = document.reduce((sum, chunk) => sum + chunk.length, 0);
    await zip.add(PROJECT_FILE, { kind: 'stream', size, open: async () => document });
    const { bytes } = await zip.finish();
    return { ...result, bytes, warnings };
  } catch (error) {
    await zip.abort();
    throw error;
  }
}

/** `<name>` … `</name>` around the pieces; nothing at all when there are none (the schema wants one). */
function wrapped(name: string, pieces: Buffer[]): Buffer[] {
  if (pieces.length === 0) return [];
  return [Buffer.from(`<${name}>`), ...pieces, Buffer.from(`</${name}>`)];
}
