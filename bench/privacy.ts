/**
 * `npm run bench:privacy` (node --import tsx bench/privacy.ts [--rounds 3] [--responses 3000]):
 * `study-export archive --tar` and `study-export share --zip` of the sandbox's text study with
 * the privacy profile (ids and an attribute pseudonymised, every text through the four detectors
 * and the sandbox's terms) against the same command identified, alternating, at N and 10 N
 * responses, in one run (media off: the profile leaves recordings out, which would flatter it).
 *
 * N is 3,000 so that both sizes measure what a handoff holds, not V8 warming up: a small
 * handoff is mostly start-up and ends before V8 has grown its young generation and its old
 * space's headroom, or compiled its optimised code, all of which a handoff of a few thousand
 * responses has (as bench:statistics compares 5,000 and 50,000). From 3,000 responses, what
 * grows with 10 N is what is held per response.
 *
 * Figures, for archive (the top-level names) and share (`share.`): profile_vs_identified = the
 * command's time with the profile / without it at 10 N (the median round; target at most 1.5);
 * rss_profile_vs_identified = peak RSS with the profile over without at 10 N (what the profile
 * adds); rss_10x_vs_1x = peak RSS at 10 N over N, the larger of the profile's and identified's
 * (target at most 1.15: flat in the number of responses). The load average before and after is
 * recorded with them. Writes bench/results/<UTC time>-privacy.json and latest-privacy.json.
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { personalTerms } from '../src/sandbox/personal.ts';
import { repoRoot, runStep, startSandboxProcess } from './processes.ts';
import { machine, medianBy, option, publishResults, round } from './report.ts';

const exec = promisify(execFile);
const log = (message: string) => process.stderr.write(`[bench:privacy] ${message}\n`);

interface Step {
  ms: number;
  bytes: number;
  files: number;
  maxrss_mb: number;
}

/** A sandbox of one (text) study with `responses` responses, exported into `dir`. */
async function prepare(dir: string, responses: number): Promise<{ output: string; study: string }> {
  const sandbox = await startSandboxProcess({ studies: 1, responses, latencyMs: 0, seed: 7 });
  try {
    await writeFile(
      join(dir, 'pipeline.yaml'),
      `name: bench\nsource: { base_url: "${sandbox.info.base_url}" }\noutput: { dir: "${join(dir, 'out')}" }\nmedia: { enabled: false }\n`,
    );
    await writeFile(join(dir, 'terms.txt'), `${personalTerms.join('\n')}\n`);
    await exec(
      process.execPath,
      [join(repoRoot, 'bin', 'study-export.js'), 'run', '-c', join(dir, 'pipeline.yaml')],
      {
        cwd: dir,
        env: { ...process.env, STUDY_API_KEY: sandbox.info.api_key },
        maxBuffer: 1 << 26,
      },
    );
    const studies = JSON.parse(
      (
        await exec(
          process.execPath,
          [join(repoRoot, 'bin', 'study-export.js'), 'studies', '-c', join(dir, 'pipeline.yaml'), '--json'],
          {
            cwd: dir,
            env: { ...process.env, STUDY_API_KEY: sandbox.info.api_key },
          },
        )
      ).stdout,
    ) as { study_id?: string; id?: string }[];
    const first = studies[0];
    return { output: join(dir, 'out', 'bench'), study: first?.study_id ?? first?.id ?? '' };
  } finally {
    await sandbox.stop();
  }
}

type Command = 'archive' | 'share';

async function step(
  prepared: { output: string; study: string },
  dir: string,
  command: Command,
  profile: boolean,
): Promise<Step> {
  const to = join(dir, 'packages');
  await rm(to, { recursive: true, force: true });
  const result = await runStep<Step>('privacy-handoff', { ...prepared, command, to, dir, profile });
  await rm(to, { recursive: true, force: true });
  return result;
}

interface Measured {
  profile: Step;
  identified: Step;
}

/** One command's rounds at one size, alternating identified and with the profile. */
async function measure(
  prepared: { output: string; study: string },
  dir: string,
  command: Command,
  label: string,
  rounds: number,
): Promise<Measured[]> {
  const measured: Measured[] = [];
  for (let n = 0; n < rounds; n++) {
    const identified = await step(prepared, dir, command, false);
    const profile = await step(prepared, dir, command, true);
    log(
      `${command} ${label} round ${n + 1}: profile ${Math.round(profile.ms)} ms ${profile.maxrss_mb} MB, identified ${Math.round(identified.ms)} ms ${identified.maxrss_mb} MB`,
    );
    measured.push({ profile, identified });
  }
  return measured;
}

/** A command's figures from its rounds at N and 10 N. */
function figures(bySize: Record<string, Measured[]>, responses: number) {
  const sizes: Record<string, unknown> = {};
  const rss: Record<string, { profile: number; identified: number }> = {};
  let ratio = 0;
  for (const [label, measured] of Object.entries(bySize)) {
    const median = medianBy(measured, (m) => m.profile.ms / m.identified.ms);
    if (!median) throw new Error('bench:privacy: no round');
    const own = {
      profile: Math.max(...measured.map((m) => m.profile.maxrss_mb)),
      identified: Math.max(...measured.map((m) => m.identified.maxrss_mb)),
    };
    rss[label] = own;
    if (label === '10x') ratio = median.profile.ms / median.identified.ms;
    sizes[label] = {
      responses: responses * (label === '10x' ? 10 : 1),
      profile_s: round(median.profile.ms / 1000, 2),
      identified_s: round(median.identified.ms / 1000, 2),
      profile_vs_identified: round(median.profile.ms / median.identified.ms, 3),
      rounds: measured.map((m) => round(m.profile.ms / m.identified.ms, 3)),
      maxrss_mb: own,
      files: { profile: median.profile.files, identified: median.identified.files },
    };
  }
  const grows = (kind: 'profile' | 'identified') => (rss['10x']?.[kind] ?? 0) / (rss['1x']?.[kind] ?? 1);
  return {
    profile_vs_identified: round(ratio, 3),
    rss_profile_vs_identified: round((rss['10x']?.profile ?? 0) / (rss['10x']?.identified ?? 1), 3),
    rss_10x_vs_1x: round(Math.max(grows('profile'), grows('identified')), 3),
    rss_10x_vs_1x_by_mode: { profile: round(grows('profile'), 3), identified: round(grows('identified'), 3) },
    sizes,
  };
}

async function main(): Promise<void> {
  const rounds = option('rounds', 3);
  const responses = option('responses', 3000);
  const loadBefore = loadavg().map((n) => round(n, 1));
  const work = await mkdtemp(join(tmpdir(), 'study-export-bench-privacy-'));
  try {
    const commands: Command[] = ['archive', 'share'];
    const measured: Record<Command, Record<string, Measured[]>> = { archive: {}, share: {} };
    for (const [label, factor] of [
      ['1x', 1],
      ['10x', 10],
    ] as const) {
      const dir = join(work, label);
      await mkdir(dir);
      log(`exporting the text study with ${responses * factor} responses...`);
      const prepared = await prepare(dir, responses * factor);
      for (const command of commands)
        measured[command][label] = await measure(prepared, dir, command, label, rounds);
      await rm(dir, { recursive: true, force: true });
    }
    const archive = figures(measured.archive, responses);
    const share = figures(measured.share, responses);
    const load_average = { before: loadBefore, after: loadavg().map((n) => round(n, 1)) };
    const result = { machine: machine(), load_average, ...archive, share };
    await publishResults(result, '-privacy', log);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

await main();
