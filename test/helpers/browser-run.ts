/**
 * The set-up of the tests that look at an output in a browser (the viewer, the archive's pages):
 * a sandbox, the pipeline run against it into a temporary folder, and chromium
 * (test/helpers/browser.ts); with `startViewedRun`, also the viewer serving the run.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { type Sandbox, type SandboxOptions, startSandbox } from '../../src/sandbox/index.ts';
import { openViewData } from '../../src/view/dataset.ts';
import { startViewServer, type ViewRequest, type ViewServer } from '../../src/view/server.ts';
import { type Browser, launchBrowser, openPage } from './browser.ts';
import { readHyparquet } from './readers.ts';
import { runAgainst, sandboxConfig } from './run.ts';

export interface BrowserRunOptions {
  sandbox: SandboxOptions;
  /** What the test does to the sandbox's data before the runs. */
  prepare?: (sandbox: Sandbox) => void;
  /** One run per entry: its output folder under `dir`, and the pipeline file's keys over the base. */
  runs: Record<string, Record<string, unknown>>;
}

export interface BrowserRun {
  sandbox: Sandbox;
  browser: Browser;
  /** The temporary folder holding the outputs (and whatever the test writes); removed by stop. */
  dir: string;
  /** The folder of each run committed, by its entry in `runs`. */
  runDirs: Record<string, string>;
  stop(): Promise<void>;
}

/** A sandbox, each of `runs` exported from it in turn, and chromium. */
export async function startBrowserRun(options: BrowserRunOptions): Promise<BrowserRun> {
  const sandbox = await startSandbox(options.sandbox);
  const stops: (() => Promise<void>)[] = [() => sandbox.close()];
  const stop = async () => {
    for (const close of stops.reverse()) await close();
  };
  try {
    options.prepare?.(sandbox);
    const dir = await mkdtemp(join(tmpdir(), 'study-export-browser-'));
    stops.push(() => rm(dir, { recursive: true, force: true }));
    const runDirs: Record<string, string> = {};
    for (const [name, overrides] of Object.entries(options.runs)) {
      const result = await runAgainst(sandbox, sandboxConfig(sandbox, join(dir, name), overrides));
      if (!result.runDir) throw new Error(`the run "${name}" committed no run folder`);
      runDirs[name] = result.runDir;
    }
    const browser = await launchBrowser();
    stops.push(() => browser.close());
    return { sandbox, browser, dir, runDirs, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

export interface ViewedRun extends BrowserRun {
  /** The one run's folder. */
  runDir: string;
  server: ViewServer;
  /** A table of the run as hyparquet reads its Parquet file. */
  table(name: string): Promise<Record<string, unknown>[]>;
  /** A new page at `path` of the viewer, which answered 200. */
  open(path: string): Promise<Page>;
}

/** One run of the sandbox, the viewer serving it, and chromium. */
export async function startViewedRun(options: {
  sandbox: SandboxOptions;
  prepare?: (sandbox: Sandbox) => void;
  /** The pipeline file's keys over the base (media, chiefly). */
  pipeline: Record<string, unknown>;
  onRequest?: (request: ViewRequest) => void;
}): Promise<ViewedRun> {
  const run = await startBrowserRun({ ...options, runs: { exports: options.pipeline } });
  try {
    const runDir = run.runDirs.exports!;
    const server = await startViewServer(await openViewData(runDir), { onRequest: options.onRequest });
    return {
      ...run,
      runDir,
      server,
      table: (name) => readHyparquet(join(runDir, `${name}.parquet`)),
      open: (path) => openPage(run.browser, server.url, path),
      async stop() {
        await server.close();
        await run.stop();
      },
    };
  } catch (error) {
    await run.stop();
    throw error;
  }
}
