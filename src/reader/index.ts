/**
 * The one reader of an output: what the viewer, the archive and the qualitative-analysis
 * export read, and nothing else of theirs. An output (out/<name> or s3://…/<name>) opens as an
 * OutputReader: its runs (each a RunReader: manifest, tables, media.zip, raw/), `latest`,
 * current/ by study, and any response's recordings wherever a run archived them. A run folder
 * opens alone with openRunAt. Nothing here writes.
 */
import { RunError } from '../errors.ts';
import { openStorage, type S3Settings } from '../storage/index.ts';
import { openRun, type RunReader } from './run.ts';

export { playlistUris, type ZipEntry, ZipIndex } from '../output/codecs/zip-index.ts';
export { byResponse } from './by-response.ts';
export {
  CURRENT_DATAPACKAGE,
  CURRENT_README,
  CURRENT_REPORT,
  type CurrentFile,
  CurrentReader,
} from './current.ts';
export {
  type HandoffPrivacy,
  type HandoffProfile,
  HandoffReader,
  type HandoffStudy,
  openHandoff,
} from './handoff.ts';
export { type LatestPointer, OutputReader, type StudyReader } from './output.ts';
export { type Found, type Located, type MediaRow, type Recording, RecordingFinder } from './recordings.ts';
export { openRun, type RunReader } from './run.ts';
export { studyRuns } from './study.ts';

/** The run folder at `location` (runs/<id>, local or s3://); a RunError when it is none. */
export async function openRunAt(location: string, s3: S3Settings = {}): Promise<RunReader> {
  const run = await openRun(await openStorage(location, s3));
  if (!run)
    throw new RunError(`${location}: no manifest.json; not a run (out/<pipeline>/runs/<run id>)`, {
      context: { file: location },
    });
  return run;
}
