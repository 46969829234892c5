/** The measured step of bench/archive.ts: `archive --tar` of one study, in its own process. */
import { archiveOutput } from '../src/archive/index.ts';
import type { HandoffProfile } from '../src/reader/index.ts';

export async function archiveStep(input: {
  output: string;
  study: string;
  to: string;
  profile?: HandoffProfile;
}) {
  const started = performance.now();
  const result = await archiveOutput({
    output: input.output,
    studies: [input.study],
    to: input.to,
    form: 'tar',
    info: {},
    ...(input.profile === undefined ? {} : { profile: input.profile }),
  });
  const bag = result.bags[0];
  return { ms: performance.now() - started, bytes: bag?.bytes ?? 0, files: bag?.files ?? 0 };
}
