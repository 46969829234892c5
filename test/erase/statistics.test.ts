/**
 * `erase` on runs written with sav and dta among their formats: each study's .sav and .dta,
 * read by readstat, lose the erased response's row and keep every other row value for value;
 * every run verifies and the response is in no byte of the output.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { runCli } from '../helpers/cli.ts';
import { withTempDir } from '../helpers/environment.ts';
import { markResponses, tracesOf, twoRuns } from '../helpers/erase.ts';
import { scanOutput } from '../helpers/output-scan.ts';
import { readstatRows } from '../helpers/statistics.ts';

let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = await startSandbox({ seed: 11, studies: 3, responses: 5 });
  markResponses(sandbox);
});
afterAll(async () => {
  await sandbox.close();
});

/** Every .sav and .dta of every run, read by readstat: its header and rows, by file. */
async function statisticsFiles(runsDir: string): Promise<Map<string, { header: string[]; rows: string[] }>> {
  const files = new Map<string, { header: string[]; rows: string[] }>();
  for (const run of (await readdir(runsDir)).filter((name) => !name.startsWith('.'))) {
    for (const format of ['sav', 'dta']) {
      for (const name of await readdir(join(runsDir, run, format))) {
        const read = await readstatRows(join(runsDir, run, format, name));
        files.set(`${run}/${format}/${name}`, {
          header: read.header,
          rows: read.rows.map((row) => JSON.stringify(row)),
        });
      }
    }
  }
  return files;
}

it('writes each study file of sav and dta again without the response, the other rows unchanged', async () => {
  await withTempDir(async (dir) => {
    const { runs } = await twoRuns(sandbox, dir, {
      output: { dir, formats: ['csv', 'parquet', 'sav', 'dta'] },
    });
    const output = join(dir, 'test');
    const { id, texts, checksums } = await tracesOf(runs[0] as string);
    const before = await statisticsFiles(join(output, 'runs'));
    // Both formats of both runs hold the response before: the check below could fail.
    const holding = [...before].filter(([, file]) => file.rows.some((row) => row.includes(id)));
    expect(holding.map(([path]) => path.split('/')[1]).sort()).toEqual(['dta', 'dta', 'sav', 'sav']);

    const readmes = await Promise.all(runs.map((run) => readFile(join(run, 'README.md'), 'utf8')));
    const erased = await runCli(['erase', output, '--response', id]);
    expect(erased, erased.stderr).toMatchObject({ code: 0 });

    const after = await statisticsFiles(join(output, 'runs'));
    expect([...after.keys()].sort()).toEqual([...before.keys()].sort());
    for (const [path, file] of before) {
      const now = after.get(path);
      expect(now?.header, path).toEqual(file.header);
      expect(now?.rows, path).toEqual(file.rows.filter((row) => !row.includes(id)));
    }
    // README.md still lists the files' variables as it did (their names as readstat reads them).
    for (const [index, run] of runs.entries()) {
      const readme = await readFile(join(run, 'README.md'), 'utf8');
      const names = [...after]
        .filter(([path]) => path.startsWith(`${run.split('/').at(-1)}/sav/`))
        .flatMap(([, file]) => file.header);
      expect(names.length).toBeGreaterThan(0);
      const listed = (text: string) => names.filter((name) => text.includes(`\`${name}\``));
      expect(listed(readme)).toEqual(listed(readmes[index] as string));
      expect(listed(readme).length).toBeGreaterThan(0);
    }
    for (const run of runs) {
      const verified = await runCli(['verify', run]);
      expect(verified, verified.stdout).toMatchObject({ code: 0 });
    }
    expect(await scanOutput(output, [id, ...texts], checksums)).toEqual([]);
  });
});
