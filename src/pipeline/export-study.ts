/**
 * One study through the stages: its response pages and details (extract), each response's
 * media (media), rows (transform) into the table writers, the study's wide sheet and, with
 * xlsx, its workbook (load).
 * Returns what happened, so the run can tell whether the study's watermark may advance.
 */
import type { ApiClient } from '../api/client.ts';
import { checked, SingleResponse, type Study } from '../api/resources.ts';
import type { PipelineConfig } from '../config/schema.ts';
import type { SchemaObserver } from '../drift/observe.ts';
import { AuthError, PayloadError, StudyExportError } from '../errors.ts';
import {
  type DetailResult,
  fetchDetails,
  listResponses,
  type PageGate,
  type ResponseClaims,
} from '../extract/index.ts';
import { storable, tooDeepReason } from '../extract/nesting.ts';
import type { MediaStage } from '../media/stage.ts';
import { type StudyFileWriter, studyFormatsOf } from '../output/formats/index.ts';
import { createWideWriter, type WideWriter, wideFormat } from '../output/formats/wide.ts';
import type { StudyOutcome } from '../output/manifest.ts';
import type { TableWriters } from '../output/table-writers.ts';
import { AttributeKeys, wideColumns } from '../output/wide-rows.ts';
import { archiveRaw, type ExtractSinks, type Reject } from '../records.ts';
import type { Storage } from '../storage/types.ts';
import { QuestionRegistry, responseRows } from '../transform/index.ts';
import { forEachBounded } from '../util/concurrency.ts';
import { diskFullError } from '../util/system-errors.ts';
import type { WrittenSheet } from './finish.ts';
import type { ProgressReporter } from './progress.ts';

export interface ExportStudyInput {
  study: Study;
  /** The name of the study's wide sheet and workbook in this run (src/names.ts studyFileNames). */
  fileName: string;
  since: string | null;
  previousLinkId: string | undefined;
  client: ApiClient;
  config: PipelineConfig;
  /** The run's files (staged until the commit). */
  files: Storage;
  /** The run's scratch folder, for the listing's spill and the wide sheets' spills. */
  scratchDir: string;
  sinks: ExtractSinks;
  writers: TableWriters;
  media: MediaStage | null;
  reporter: ProgressReporter;
  /** Shared by the studies of a run: one listing page held at a time. */
  pageGate: PageGate;
  /**
   * Runs the study's details once its listing is paged: a run lets fewer studies fetch
   * details at once than it lets list, so the next study's listing is ready when one ends.
   */
  detailsSlot?: <T>(fetchDetails: () => Promise<T>) => Promise<T>;
  /** Which study each response id of the run belongs to (one study per response). */
  claims?: ResponseClaims;
  /** A response whose detail could not be fetched: its rows are incomplete. */
  onIncompleteResponse?: (responseId: string) => void;
  /** Where the study's wide sheet is also written: its current sheet, when it is new there. */
  wideCopy?: Pick<Storage, 'create' | 'describe'>;
  /** A sample (run --limit): at most this many responses, the first the study lists. */
  limit?: number;
  /** The study's wide sheet is written: its path in the run and its header (datapackage.json). */
  onWideSheet?: (sheet: WrittenSheet) => void;
  /** Sees each response's payloads as they pass, for the study's schema (src/drift/). */
  observer?: SchemaObserver;
}

/** Warnings after which a study's listing may be incomplete, so its watermark must hold. */
const INCOMPLETE_LISTING = new Set([
  'page_repeated',
  'page_cap',
  'listing_beyond_declared',
  'listing_unsettled',
]);

/** A study's outcome before anything of it is exported. */
export function emptyOutcome(study: Study, since: string | null): StudyOutcome {
  return {
    study_id: study.id,
    link_id: study.link_id,
    since,
    responses: 0,
    rejects: 0,
    media_failed: 0,
    lossless: true,
    error: null,
  };
}

export async function exportStudy(input: ExportStudyInput): Promise<StudyOutcome> {
  const { study, since, config, sinks } = input;
  const outcome = emptyOutcome(study, since);
  if (input.previousLinkId !== undefined && input.previousLinkId !== study.link_id) {
    sinks.warn({
      code: 'study_renamed',
      message: `study ${study.id} was renamed from "${input.previousLinkId}" to "${study.link_id}"; its state and outputs follow the permanent id`,
      study_id: study.id,
      link_id: study.link_id,
    });
  }
  const studySinks = trackLoss(sinks, outcome);
  const wide = createWideWriter(input.files, input.scratchDir, input.fileName, {
    ...config.output.csv,
    ...(input.wideCopy ? { alsoTo: input.wideCopy } : {}),
  });
  // The study's files in the formats written per study (a workbook, …) beside its wide sheet.
  const studyFiles = studyFormatsOf(config.output.formats)
    .filter((format) => format !== wideFormat)
    .map((format) =>
      format.open({
        storage: input.files,
        scratchDir: input.scratchDir,
        study,
        fileName: input.fileName,
        csv: config.output.csv,
        warn: (code, message) => sinks.warn({ code, message, study_id: study.id, link_id: study.link_id }),
      }),
    );
  const questions = new QuestionRegistry();
  const attributeKeys = new AttributeKeys();
  try {
    const listed = listResponses(
      input.client,
      study,
      {
        perPage: config.source.per_page,
        updatedSince: since ?? undefined,
        includeInProgress: config.source.include_in_progress,
        pageGate: input.pageGate,
        spillDir: input.scratchDir,
        maxPages: config.source.max_pages,
        ...(input.claims ? { claims: input.claims } : {}),
        ...(input.limit === undefined ? {} : { limit: input.limit }),
      },
      studySinks,
    );
    await listed.paged();
    const details = fetchDetails(input.client, study, listed, studySinks, {
      window: config.source.concurrency * 2,
    });
    const parallel = input.media ? config.media.concurrency + 1 : 1;
    const slot = input.detailsSlot ?? ((fetch) => fetch());
    const load: StudyLoad = { input, outcome, questions, attributeKeys, wide, studyFiles };
    await slot(() => forEachBounded(details, parallel, (result) => loadResponse(load, result)));
    const columns = wideColumns(questions.all(), chosenAttributes(attributeKeys, input));
    if (outcome.responses > 0) {
      // Finished whether or not a caller listens: an optional call would skip its argument too.
      const sheet = await wide.finish(columns);
      input.onWideSheet?.({ path: sheet.path, header: sheet.header ?? [], study_id: study.id, columns });
      for (const file of studyFiles) await file.finish(columns);
    } else {
      // Nothing exported (an incremental run with nothing new for the study): no sheet or
      // workbook holding a header alone; current/ keeps the study's whole ones.
      await wide.abort();
      for (const file of studyFiles) await file.abort();
    }
  } catch (error) {
    await wide.abort();
    for (const file of studyFiles) await file.abort();
    // Without a key nothing else can succeed: stop the run. A listing the service did not
    // answer (after retries) loses this study only: it is partial and its watermark holds.
    // A full disk is the machine's, not the study's: it ends the run.
    if (error instanceof AuthError || !(error instanceof StudyExportError) || diskFullError(error))
      throw error;
    outcome.lossless = false;
    outcome.error = error.message;
    sinks.warn({ code: 'study_failed', message: error.message, study_id: study.id, link_id: study.link_id });
  }
  return outcome;
}

/** Where one study's responses are loaded, and where what happened is counted. */
interface StudyLoad {
  input: ExportStudyInput;
  outcome: StudyOutcome;
  questions: QuestionRegistry;
  attributeKeys: AttributeKeys;
  wide: WideWriter;
  studyFiles: StudyFileWriter[];
}

/** One response: its media into media.zip, its rows (transform) into the writers. */
async function loadResponse(load: StudyLoad, { listed, detail, fetchedAt }: DetailResult): Promise<void> {
  const { input, outcome, questions, attributeKeys, wide, studyFiles } = load;
  const { study } = input;
  if (detail === null) {
    outcome.lossless = false;
    input.onIncompleteResponse?.(listed.id);
  }
  input.observer?.response(listed, detail);
  const media =
    detail && input.media
      ? await input.media.archiveResponse(
          { study_id: study.id, link_id: study.link_id, response_id: listed.id },
          detail,
          fetchedAt,
          () => refreshDetail(input, listed.id),
        )
      : [];
  if (media.length > 0) input.reporter.tick('media', media.length);
  const rows = responseRows({ study, listed, detail, media });
  const { writers } = input;
  await writers.write('responses', [rows.response]);
  await writers.write('questions', questions.add(rows.questions));
  await writers.write('answers', rows.answers);
  await writers.write('transcript', rows.transcript);
  await writers.write('attributes', rows.attributes);
  attributeKeys.add(rows.attributes.map((row) => row.key));
  await writers.write('media', rows.media);
  await wide.add(rows.wide);
  for (const file of studyFiles)
    await file.add({ wide: rows.wide, answers: rows.answers, transcript: rows.transcript });
  const failed = rows.media.filter((m) => m.status === 'failed').length;
  outcome.media_failed += failed;
  if (failed > 0) outcome.lossless = false;
  outcome.responses += 1;
  input.reporter.tick('details');
}

/** The attribute keys the study's sheets get a column for; a warning when some get none. */
function chosenAttributes(keys: AttributeKeys, input: ExportStudyInput): string[] {
  const chosen = keys.chosen();
  if (chosen.leftOut > 0) {
    const { study } = input;
    input.sinks.warn({
      code: 'wide_attributes_left_out',
      message: `study ${study.link_id}: its responses carry ${chosen.keys.length + chosen.leftOut} attribute keys; the wide sheet has a column for the ${chosen.keys.length} most frequent, the attributes table holds every one`,
      study_id: study.id,
      link_id: study.link_id,
    });
  }
  return chosen.keys;
}

/** Rejects and incomplete listings of this study mark it as lossy. */
function trackLoss(sinks: ExtractSinks, outcome: StudyOutcome): ExtractSinks {
  return {
    raw: sinks.raw,
    rejects: {
      write(reject: Reject) {
        outcome.rejects += 1;
        outcome.lossless = false;
        sinks.rejects.write(reject);
      },
    },
    warn(warning) {
      if (INCOMPLETE_LISTING.has(warning.code)) outcome.lossless = false;
      sinks.warn(warning);
    },
  };
}

/** A fresh detail for new signed links, when the media stage finds the old ones expired. */
async function refreshDetail(input: ExportStudyInput, responseId: string): Promise<SingleResponse> {
  const fetched = await input.client.getResponse(input.study.link_id, responseId);
  const { study } = input;
  const payload = storable(fetched.payload);
  archiveRaw(
    input.sinks.raw,
    'get_response',
    { ...fetched, payload },
    {
      link_id: study.link_id,
      study_id: study.id,
      response_id: responseId,
    },
  );
  if (payload !== fetched.payload) {
    throw new PayloadError(`get_response for ${responseId}: ${tooDeepReason}`, {
      context: { operation: 'get_response', study: study.link_id, response: responseId, url: fetched.url },
    });
  }
  const parsed = checked(SingleResponse, fetched.payload);
  if (!parsed.success) throw parsed.error;
  return parsed.data;
}
