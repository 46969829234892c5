/**
 * The package as users get it: `npm pack`, installed with `npm install --global` into a fresh
 * prefix the way the Dockerfile installs it, the install folder made read-only and the
 * program run by another, non-root user from an empty folder: --version, init, a full
 * sandbox run, verify. Nothing appears in the install folder, no compiler is installed, the
 * heap settings hold. The same for a package made from a git clone (`npm pack git+file://`).
 *
 * Slow (npm installs the dependency tree from the registry or its cache): one tarball is
 * packed and reused. No image can be built here (no Docker daemon), so the Dockerfile is read
 * and its steps are run without Docker: its final stage must install what `npm pack` makes
 * and run the package's own command.
 */
import { execFile, spawn } from 'node:child_process';
import { chmod, chown, mkdir, mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import packageJson from '../../package.json' with { type: 'json' };
import { exitOf, repoRoot } from '../helpers/cli.ts';

const exec = promisify(execFile);
const USER = 'study-export-test';

let work: string;
let tarball: string;
/** The user the installed program runs as: uid and gid, or null when this process is not root. */
let runAs: { uid: number; gid: number } | null = null;
/** Whether this test made the user (then it removes it again). */
let madeUser = false;

beforeAll(async () => {
  work = await mkdtemp(path.join(tmpdir(), 'study-export-package-'));
  // Other users pass through it to the install and their own folders.
  await chmod(work, 0o755);
  const { stdout } = await exec('npm', ['pack', '--pack-destination', work, '--json'], {
    cwd: repoRoot,
    maxBuffer: 1 << 24,
  });
  const [packed] = JSON.parse(stdout) as { filename: string }[];
  tarball = path.join(work, packed!.filename);
  if (process.getuid?.() === 0) {
    madeUser = await exec('useradd', [
      '--system',
      '--no-create-home',
      '--shell',
      '/usr/sbin/nologin',
      USER,
    ]).then(
      () => true,
      (error: { stderr?: string }) => {
        if (!/already exists/.test(error.stderr ?? '')) throw error;
        return false;
      },
    );
    const id = async (flag: string) => Number((await exec('id', [flag, USER])).stdout.trim());
    runAs = { uid: await id('-u'), gid: await id('-g') };
  }
}, 120_000);

afterAll(async () => {
  if (madeUser) await exec('userdel', [USER]);
  if (!work) return;
  await exec('chmod', ['-R', 'u+w', work]);
  await rm(work, { recursive: true, force: true });
});

/** The Dockerfile's stages: base image, name, and instructions (continuation lines joined). */
function dockerStages(text: string) {
  const lines = text
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
  const stages: { from: string; name?: string; steps: { op: string; args: string }[] }[] = [];
  for (const line of lines) {
    const [op = '', ...rest] = line.split(/\s+/);
    const args = rest.join(' ');
    if (op === 'FROM') {
      const [from = '', as, name] = rest;
      stages.push({ from, ...(as?.toUpperCase() === 'AS' && name ? { name } : {}), steps: [] });
    } else {
      stages.at(-1)?.steps.push({ op, args });
    }
  }
  return stages;
}

/** Installs a tarball into a new prefix as the Dockerfile's final stage does. */
async function installGlobally(file: string, prefix: string, flags: string[]): Promise<void> {
  await exec('npm', ['install', ...flags, '--prefix', prefix, file], {
    maxBuffer: 1 << 24,
    timeout: 600_000,
  });
}

/** Every path under `dir` with its size and modification time. */
async function listing(dir: string): Promise<string[]> {
  const entries: string[] = [];
  const walk = async (folder: string) => {
    for (const entry of await readdir(folder, { withFileTypes: true })) {
      const full = path.join(folder, entry.name);
      const info = await stat(full).catch(() => null);
      entries.push(`${path.relative(dir, full)} ${info?.size ?? '-'} ${info?.mtimeMs ?? '-'}`);
      if (entry.isDirectory()) await walk(full);
    }
  };
  await walk(dir);
  return entries.sort();
}

/** A folder the test user owns (its working folder, its TMPDIR). */
async function userFolder(name: string): Promise<string> {
  const dir = path.join(work, name);
  await mkdir(dir, { recursive: true });
  if (runAs) await chown(dir, runAs.uid, runAs.gid);
  return dir;
}

interface Installed {
  prefix: string;
  /** The command on the prefix's PATH, as `study-export` would be found. */
  command: string;
  /** The package's folder. */
  folder: string;
}

/** The program as the test user runs it: argv through setpriv (exec, no fork), PATH with node. */
function asUser(installed: Installed, args: string[], cwd: string, tmp: string) {
  const argv = runAs
    ? [
        'setpriv',
        `--reuid=${runAs.uid}`,
        `--regid=${runAs.gid}`,
        '--clear-groups',
        installed.command,
        ...args,
      ]
    : [installed.command, ...args];
  const env = {
    PATH: `${path.join(installed.prefix, 'bin')}:${path.dirname(process.execPath)}:/usr/bin:/bin`,
    HOME: cwd,
    TMPDIR: tmp,
    CI: 'true',
  };
  return { file: argv[0]!, args: argv.slice(1), options: { cwd, env } };
}

async function runInstalled(installed: Installed, args: string[], cwd: string, tmp: string) {
  const call = asUser(installed, args, cwd, tmp);
  return exec(call.file, call.args, { ...call.options, timeout: 120_000, maxBuffer: 1 << 24 }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code: number; stdout: string; stderr: string }) => error,
  );
}

/** What every install must do, read-only and as another user. */
async function checkInstall(installed: Installed, label: string): Promise<void> {
  // No compiler anywhere in the install, and the package carries no sources: dist/ runs.
  const { stdout: compilers } = await exec('find', [
    installed.prefix,
    '-name',
    'tsx',
    '-o',
    '-name',
    'esbuild',
  ]);
  expect(compilers).toBe('');
  const shipped = (await readdir(installed.folder)).sort();
  expect(shipped).toEqual(expect.arrayContaining(['bin', 'dist', 'package.json', 'npm-shrinkwrap.json']));
  for (const absent of ['src', 'test', 'bench', '.ci', 'tsconfig.json', 'biome.json', 'vitest.config.ts'])
    expect(shipped).not.toContain(absent);

  await exec('chmod', ['-R', 'a-w', installed.prefix]);
  const before = await listing(installed.prefix);
  const cwd = await userFolder(`${label}-cwd`);
  const tmp = await userFolder(`${label}-tmp`);

  const version = await runInstalled(installed, ['--version'], cwd, tmp);
  expect(version).toEqual({ code: 0, stdout: `${packageJson.version}\n`, stderr: '' });

  const init = await runInstalled(installed, ['init', 'trial'], cwd, tmp);
  expect(init.code).toBe(0);
  expect(init.stdout).toContain('wrote pipelines/trial.yaml');
  const run = await runInstalled(installed, ['run', '--pipeline', 'trial'], cwd, tmp);
  expect(run.code).toBe(0);
  const runId = (await readFile(path.join(cwd, 'out', 'trial', 'latest'), 'utf8')).trim();
  const verified = await runInstalled(
    installed,
    ['verify', path.join('out', 'trial', 'runs', runId)],
    cwd,
    tmp,
  );
  expect(verified.stdout).toMatch(/: ok \(checked \d+ files, \d+ tables, \d+ rows, [1-9]\d* zip entries\)/);
  expect(verified.code).toBe(0);

  // The heap settings hold for the installed command: node's own command line carries them.
  const call = asUser(installed, ['sandbox', '--port', '0'], cwd, tmp);
  const child = spawn(call.file, call.args, { ...call.options, stdio: ['ignore', 'pipe', 'pipe'] });
  try {
    const first = await new Promise<string>((resolve, reject) => {
      createInterface({ input: child.stdout! }).once('line', resolve);
      child.once('exit', (code) => reject(new Error(`sandbox exited early with ${code}`)));
    });
    expect(JSON.parse(first)).toHaveProperty('base_url');
    const argv = (await readFile(`/proc/${child.pid}/cmdline`, 'utf8')).split('\0').filter(Boolean);
    expect(path.basename(argv[0] ?? '')).toBe('node');
    expect(argv.slice(1, 3)).toEqual(['--max-old-space-size=1024', '--initial-old-space-size=64']);
    expect(await readFile(`/proc/${child.pid}/status`, 'utf8')).toMatch(
      runAs ? new RegExp(`^Uid:\\s+${runAs.uid}\\s`, 'm') : /^Uid:/m,
    );
  } finally {
    child.kill('SIGTERM');
    await exitOf(child);
  }
  // Nothing written into the install, and the user's TMPDIR left as it was found.
  expect(await listing(installed.prefix)).toEqual(before);
  expect(await readdir(tmp)).toEqual([]);
}

describe('the installed package', () => {
  it("the Dockerfile's final stage installs what npm pack makes and runs the package's command; installed so, it works read-only as another user", async () => {
    const stages = dockerStages(await readFile(path.join(repoRoot, 'Dockerfile'), 'utf8'));
    expect(stages.map((stage) => stage.from)).toEqual(['node:20', 'node:20-slim']);
    const [build, final] = stages as [(typeof stages)[0], (typeof stages)[0]];
    const runs = (stage: typeof build) => stage.steps.filter((step) => step.op === 'RUN').map((s) => s.args);
    expect(runs(build).some((line) => /^npm ci\b/.test(line))).toBe(true);
    const pack = runs(build).find((line) => line.includes('npm pack'))!;
    // What the build stage packs is what the final stage copies in and installs.
    const packedAs = /mv \S+ (\S+\.tgz)/.exec(pack)?.[1];
    const copied = final.steps.find(
      (step) => step.op === 'COPY' && step.args.startsWith(`--from=${build.name} `),
    );
    expect(copied?.args.split(/\s+/)[1]).toBe(packedAs);
    const target = copied?.args.split(/\s+/)[2] ?? '';
    const install = runs(final).find((line) => line.startsWith('npm install'))!;
    const installWords = install.split('&&')[0]!.trim().split(/\s+/);
    expect(installWords.at(-1)).toBe(target);
    expect(installWords).toContain('--global');
    // Not root, TMPDIR set, the entrypoint the package's own command (whose first line sets the heap).
    const user = final.steps.filter((step) => step.op === 'USER').at(-1)?.args;
    expect(user).toBeDefined();
    expect(['root', '0']).not.toContain(user);
    expect(final.steps.some((step) => step.op === 'ENV' && /^TMPDIR=/.test(step.args))).toBe(true);
    const entrypoint = JSON.parse(final.steps.find((step) => step.op === 'ENTRYPOINT')!.args) as string[];
    expect(Object.keys(packageJson.bin)).toContain(entrypoint[0]);
    const cmd = JSON.parse(final.steps.find((step) => step.op === 'CMD')!.args) as string[];
    // The build context keeps everything npm pack needs.
    const ignored = (await readFile(path.join(repoRoot, '.dockerignore'), 'utf8'))
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => line !== '' && !line.startsWith('#'));
    for (const needed of [
      'package.json',
      'npm-shrinkwrap.json',
      'bin',
      'scripts',
      'src',
      'docs',
      'README.md',
    ])
      expect(ignored).not.toContain(needed);

    // The same steps without Docker.
    const prefix = path.join(work, 'docker-prefix');
    await installGlobally(tarball, prefix, installWords.slice(2, -1));
    const installed: Installed = {
      prefix,
      command: path.join(prefix, 'bin', entrypoint[0]!),
      folder: path.join(prefix, 'lib', 'node_modules', packageJson.name),
    };
    const cwd = await userFolder('docker-cwd');
    const help = await runInstalled(
      installed,
      [...entrypoint.slice(1), ...cmd],
      cwd,
      await userFolder('docker-tmp'),
    );
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('study-export <command>');
    await checkInstall(installed, 'docker');
  }, 900_000);

  it("the examples' install step (the same in every workflow) installs a tarball and finds the command", async () => {
    const steps = await Promise.all(
      ['github-actions.yml', 'github-actions-s3.yml', 'github-actions-sharded.yml'].map(async (name) => {
        const workflow = parse(await readFile(path.join(repoRoot, 'examples', name), 'utf8')) as {
          jobs: { export: { steps: { name?: string; run?: string }[] } };
        };
        return workflow.jobs.export.steps.find((step) => step.name === 'Install study-export')?.run;
      }),
    );
    expect(steps[0]).toContain('npm install --global');
    expect(new Set(steps).size).toBe(1);
    const prefix = path.join(work, 'workflow-prefix');
    const runnerTemp = path.join(work, 'runner-temp');
    await mkdir(runnerTemp);
    // As on a runner: npm's global prefix is where the command lands, and PATH has its bin.
    const { stdout } = await exec('bash', ['-euo', 'pipefail', '-c', steps[0]!], {
      cwd: runnerTemp,
      env: {
        ...process.env,
        npm_config_prefix: prefix,
        PATH: `${path.join(prefix, 'bin')}:${process.env.PATH ?? ''}`,
        RUNNER_TEMP: runnerTemp,
        STUDY_EXPORT_PACKAGE: tarball,
      },
      maxBuffer: 1 << 24,
      timeout: 600_000,
    });
    expect(stdout.trim().split('\n').at(-1)).toBe(packageJson.version);
    expect((await readdir(path.join(prefix, 'bin'))).sort()).toEqual(Object.keys(packageJson.bin).sort());
  }, 900_000);

  it('a package made from a git clone of this commit installs and runs the same way', async () => {
    const repository = path.join(work, 'repository.git');
    await exec('git', ['clone', '--quiet', '--bare', repoRoot, repository]);
    const { stdout: head } = await exec('git', ['rev-parse', 'HEAD'], { cwd: repoRoot });
    const packed = path.join(work, 'from-git');
    await mkdir(packed);
    // npm pack of a git URL installs the clone's dependencies and runs its prepare (the build).
    const { stdout } = await exec(
      'npm',
      ['pack', `git+file://${repository}#${head.trim()}`, '--pack-destination', packed, '--json'],
      { cwd: packed, maxBuffer: 1 << 24, timeout: 600_000 },
    );
    const [made] = JSON.parse(stdout) as { filename: string; files: { path: string }[] }[];
    expect(made!.files.map((file) => file.path)).toContain('dist/cli.js');
    const prefix = path.join(work, 'git-prefix');
    await installGlobally(path.join(packed, made!.filename), prefix, ['--global', '--no-audit', '--no-fund']);
    await checkInstall(
      {
        prefix,
        command: path.join(prefix, 'bin', 'study-export'),
        folder: path.join(prefix, 'lib', 'node_modules', packageJson.name),
      },
      'git',
    );
  }, 900_000);
});
