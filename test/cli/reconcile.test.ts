/**
 * run --reconcile from the command line, against a sandbox over HTTP: the guard exits 3 naming
 * the study and the counts; --accept-deletions lets it through (exit 0), and the summary says
 * how many responses left current/.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { runCli, sandboxPipeline, workdir } from '../helpers/cli.ts';

let sandbox: Sandbox;
let work: { dir: string; cleanup: () => Promise<void> };
const env = () => ({ STUDY_API_KEY: sandbox.api_key });

beforeAll(async () => {
  sandbox = await startSandbox({ seed: 4, studies: 3, responses: 10 });
  work = await workdir(sandboxPipeline(sandbox.base_url, { name: 'cli-reconcile', media: false }));
});
afterAll(async () => {
  await sandbox.close();
  await work.cleanup();
});

it('exits 3 naming the study and the counts when a reconcile would take too much; --accept-deletions goes through', async () => {
  expect((await runCli(['run'], { cwd: work.dir, env: env() })).code).toBe(0);
  const [study] = sandbox.studies();
  const listed = sandbox.responses(study!.link_id);
  // Three of ten deleted: past the default fraction (0.2).
  for (const response of listed.slice(0, 3)) sandbox.deleteResponse(study!.link_id, response.id);

  const held = await runCli(['run', '--reconcile'], { cwd: work.dir, env: env() });
  expect(held.code).toBe(3);
  expect(held.stderr).toContain(study!.link_id);
  expect(held.stderr).toContain('lists 7 responses and no longer lists 3 of the 10 current/ holds');
  expect(held.stdout).toContain('0 responses the service no longer lists taken out of current/');
  expect(held.stdout).toContain('1 held back by incremental.reconcile_max_fraction');

  const accepted = await runCli(['run', '--accept-deletions'], { cwd: work.dir, env: env() });
  expect(accepted.code).toBe(0);
  expect(accepted.stdout).toContain('3 responses the service no longer lists taken out of current/');
});
