/**
 * Every GitHub Actions example tries its export again on exit 75 (another run holds the
 * output), and on nothing else: the step's own script runs in bash with `study-export` and
 * `sleep` replaced by shell functions, the first answering a scripted list of exit codes.
 */
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { repoRoot } from '../helpers/cli.ts';
import type { WorkflowStep } from '../helpers/examples.ts';

const workflows = ['github-actions.yml', 'github-actions-s3.yml', 'github-actions-sharded.yml'];

async function exportScript(file: string): Promise<string> {
  const workflow = parse(await readFile(path.join(repoRoot, 'examples', file), 'utf8')) as {
    jobs: { export: { steps: WorkflowStep[] } };
  };
  const step = workflow.jobs.export.steps.find((each) => /study-export run\b/.test(each.run ?? ''));
  if (step?.run === undefined) throw new Error(`${file}: no step runs "study-export run"`);
  return step.run;
}

/** Runs the script with `study-export` exiting with each of `codes` in turn; its exit code and calls. */
async function runWithCodes(
  script: string,
  codes: number[],
): Promise<{ code: number; calls: number; slept: number }> {
  const shims = [
    `codes=(${codes.join(' ')}); calls=0; slept=0`,
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a bash array read, not a template
    'study_export() { local code=${codes[$calls]}; calls=$((calls + 1)); return "$code"; }',
    'sleep() { slept=$((slept + 1)); }',
    `trap 'echo "calls=$calls slept=$slept" >&2' EXIT`,
  ].join('\n');
  const body = script.replaceAll('study-export ', 'study_export ');
  const result = await promisify(execFile)('bash', ['-eo', 'pipefail', '-c', `${shims}\n${body}`], {
    env: { PATH: process.env.PATH ?? '', PIPELINE: 'nightly', STUDY_EXPORT_OUT: 'out' },
  }).then(
    (done) => ({ code: 0, stderr: done.stderr }),
    (error: { code: number; stderr: string }) => ({ code: error.code, stderr: error.stderr }),
  );
  const [, calls, slept] = /calls=(\d+) slept=(\d+)/.exec(result.stderr) ?? [];
  return { code: result.code, calls: Number(calls), slept: Number(slept) };
}

describe.each(workflows)('%s', (file) => {
  it('tries again after 75 and stops at the first other code', async () => {
    const script = await exportScript(file);
    expect(await runWithCodes(script, [75, 75, 0])).toEqual({ code: 0, calls: 3, slept: 2 });
    expect(await runWithCodes(script, [75, 3])).toEqual({ code: 3, calls: 2, slept: 1 });
  });

  it('never tries again after 1, 2 or 4', async () => {
    const script = await exportScript(file);
    for (const code of [1, 2, 4])
      expect(await runWithCodes(script, [code, 0])).toEqual({ code, calls: 1, slept: 0 });
  });

  it('gives up with 75 after six attempts', async () => {
    const script = await exportScript(file);
    expect(await runWithCodes(script, [75, 75, 75, 75, 75, 75, 0])).toEqual({ code: 75, calls: 6, slept: 6 });
  });
});
