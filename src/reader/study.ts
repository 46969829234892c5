/** The runs a study's packages come from. */
import type { RunReader } from './run.ts';

/** The runs that exported the study, oldest first (their manifests list it). */
export function studyRuns(runs: readonly RunReader[], studyId: string): RunReader[] {
  return runs.filter((run) => run.manifest.studies?.some((study) => study.study_id === studyId)).reverse();
}
