/**
 * The measured step of bench/privacy.ts: `archive --tar` or `share --zip` of one study, with the
 * privacy profile or identified.
 */
import { join } from 'node:path';
import { PrivacyConfig } from '../src/config/schema.ts';
import { loadPrivacyProfile } from '../src/privacy/index.ts';
import { shareOutput } from '../src/share/index.ts';
import { archiveStep } from './archive-step.ts';

export async function privacyHandoffStep(input: {
  command: 'archive' | 'share';
  output: string;
  study: string;
  to: string;
  dir: string;
  profile: boolean;
}) {
  const started = performance.now();
  const config = PrivacyConfig.parse({
    key_env: 'BENCH_PSEUDONYM_KEY',
    attributes: { 'utm_*': 'keep', id: 'pseudonymise' },
    text: { terms: 'terms.txt' },
  });
  const profile = input.profile
    ? await loadPrivacyProfile(config, {
        file: join(input.dir, 'pipeline.yaml'),
        cwd: input.dir,
        env: { BENCH_PSEUDONYM_KEY: 'bench secret' },
      })
    : 'identified';
  if (input.command === 'share') {
    const [shared] = await shareOutput({
      output: input.output,
      studies: [input.study],
      to: input.to,
      form: 'zip',
      profile,
    });
    return { ms: performance.now() - started, bytes: shared?.bytes ?? 0, files: shared?.files ?? 0 };
  }
  const bag = await archiveStep({ output: input.output, study: input.study, to: input.to, profile });
  return { ms: performance.now() - started, bytes: bag.bytes, files: bag.files };
}
