/**
 * Incremental state: state.json, keyed by permanent study id (link_ids can change).
 *
 * The watermark rule. A study's watermark is the run's start time minus WATERMARK_LAG_MS,
 * recorded only after the run is committed and only for studies that finished without
 * loss. The next run lists that study with updated_since = watermark. Why this and not
 * "the newest updated_at seen":
 * - list items may lack updated_at (the spec's sample omits it), so "newest seen" can be
 *   unknowable, while the service still filters on its own updated_at;
 * - a response updated while the run pages through the list has updated_at after the run
 *   started, so the next run fetches it again;
 * - the lag absorbs clock skew between this machine and the service.
 * The price is that responses updated in the lag window before a run are exported again
 * by the next run; rows are keyed by response_id, so the later run's copy supersedes.
 */
import { readFile, stat } from 'node:fs/promises';
import { z } from 'zod';
import { ConfigError } from '../errors.ts';
import { writeFileAtomic } from '../util/fs.ts';

export const WATERMARK_LAG_MS = 15 * 60 * 1000;

const StudyState = z.object({
  link_id: z.string(),
  /** ISO timestamp passed as updated_since on the next incremental run. */
  watermark: z.string().nullable(),
  last_run: z.string(),
  last_run_at: z.string(),
});
export type StudyState = z.infer<typeof StudyState>;

const StateFile = z.object({
  version: z.literal(1),
  studies: z.record(z.string(), StudyState),
});
export type State = z.infer<typeof StateFile>;

export const emptyState = (): State => ({ version: 1, studies: {} });

export async function readState(path: string): Promise<State> {
  let text: string;
  try {
    // A device or a folder is not a state file (reading /dev/zero would never end).
    if (!(await stat(path)).isFile()) {
      throw new ConfigError(`${path}: the state file is not a regular file`, { context: { file: path } });
    }
    text = await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return emptyState();
    throw error;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (cause) {
    throw new ConfigError(`${path}: state file is not valid JSON; fix it, or move it away to start over`, {
      context: { file: path },
      cause,
    });
  }
  const result = StateFile.safeParse(parsed);
  if (!result.success) {
    throw new ConfigError(
      `${path}: state file has an unexpected shape (${result.error.issues[0]?.message})`,
      {
        context: { file: path },
      },
    );
  }
  return result.data;
}

export async function writeState(path: string, state: State): Promise<void> {
  await writeFileAtomic(path, `${JSON.stringify(state, null, 2)}\n`);
}

/** Where an incremental study starts: --since wins, --full or incremental:false mean none. */
export function effectiveSince(
  previous: StudyState | undefined,
  options: { since?: string; full?: boolean; incremental: boolean },
): string | null {
  if (options.since) return new Date(options.since).toISOString();
  if (options.full || !options.incremental) return null;
  return previous?.watermark ?? null;
}

/**
 * The state after a committed run. A study moves only when it finished without loss, and
 * only when this run covered everything since its previous watermark (a --since later
 * than the stored watermark would otherwise skip the gap).
 */
export function advanceState(
  state: State,
  finished: { study_id: string; link_id: string; since: string | null; lossless: boolean }[],
  run: { id: string; startedAt: number },
): State {
  const next: State = { version: 1, studies: { ...state.studies } };
  const watermark = new Date(run.startedAt - WATERMARK_LAG_MS).toISOString();
  for (const study of finished) {
    const previous = state.studies[study.study_id];
    const coversGap =
      study.since === null || (previous?.watermark != null && study.since <= previous.watermark);
    if (!study.lossless || !coversGap) continue;
    next.studies[study.study_id] = {
      link_id: study.link_id,
      watermark,
      last_run: run.id,
      last_run_at: new Date(run.startedAt).toISOString(),
    };
  }
  return next;
}
