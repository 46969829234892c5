/**
 * A sample run (`run --limit N`): at most N responses of each study, to try a pipeline on a real
 * service before exporting all of it. Its manifest, README.md and report.html say so in these
 * words, declared once.
 */
import type { Sample } from '../manifest.ts';

export type { Sample };

/** What a sample run is, for the people reading its README.md and report.html. */
export function sampleNote(sample: Sample): string {
  const responses = sample.limit === 1 ? '1 response' : `${sample.limit} responses`;
  return `sample: at most ${responses} of each study (run --limit ${sample.limit}), not the whole export; the state, current/ and latest were left as they were`;
}
