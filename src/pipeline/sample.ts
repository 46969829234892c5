/**
 * `run --limit N`: a sample of a real service before committing to all of it (as dlt's
 * add_limit or Airbyte's test read). It exports at most N responses of each study, the first
 * the service lists (from the beginning, or from --since: a sample ignores the watermarks), into
 * a run of its own, runs/<run id>-sample, marked as a sample in its manifest, README.md and
 * report.html. It moves nothing else: the state, current/ and `latest` stay byte for byte as they
 * were, and what a killed run left is left for the next full run to finish. So the next run
 * without --limit starts exactly where it would have.
 */
import type { Sample } from '../output/guide/sample.ts';
import type { RunOptions } from './types.ts';

/** The sample a run takes, or null for a run that exports everything it lists. */
export function sampleOf(options: Pick<RunOptions, 'limit'>): Sample | null {
  return options.limit === undefined ? null : { limit: options.limit };
}

/**
 * The options a run works with: a sample lists each study from the beginning (or --since),
 * whatever the watermarks say, and so never finds "nothing new".
 */
export function withSample<T extends RunOptions>(options: T): T {
  return options.limit === undefined ? options : { ...options, full: true };
}
