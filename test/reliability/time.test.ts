/**
 * Time with one meaning, end to end: zone-less timestamps are UTC whatever this machine's
 * zone (the run is a child process in Asia/Kathmandu, +05:45), microseconds reach CSV and
 * Parquet (TIMESTAMP micros, read back by DuckDB and hyparquet value by value), and across
 * runs the later-fetched copy of a response is the current one, even re-stamped earlier.
 */
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { asyncBufferFromFile, parquetMetadataAsync, parquetReadObjects } from 'hyparquet';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { verifyRun } from '../../src/load/verify.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { withTempDir } from '../helpers/environment.ts';
import { validateDataPackage } from '../helpers/frictionless.ts';
import { duckdb, readCsv } from '../helpers/readers.ts';
import { cliPipeline } from '../helpers/run-files.ts';

let sandbox: Sandbox;

beforeAll(async () => {
  sandbox = await startSandbox({ seed: 83, studies: 1, responses: 4 });
});
afterAll(async () => {
  await sandbox.close();
});

/** DuckDB's reading of a table's timestamps, as epoch microseconds (independent of any zone). */
async function duckMicros(glob: string, column: 'created_at' | 'updated_at', hive = false) {
  return duckdb(async (query) => {
    const rows = await query(
      `select response_id, epoch_us(${column})::varchar as us, typeof(${column}) as type from read_parquet('${glob}'${hive ? ', hive_partitioning = true' : ''}) order by response_id`,
    );
    return rows.map((row) => ({
      id: row.response_id as string,
      us: row.us as string | null,
      type: row.type,
    }));
  });
}

it('zone-less timestamps are UTC under TZ=Asia/Kathmandu and keep their microseconds in CSV, Parquet and current/', async () => {
  await withTempDir(async (dir) => {
    const [study] = sandbox.studies();
    const [first, second, third] = sandbox.responses(study!.link_id);
    const stamps = new Map([
      [first!.id, { created_at: '2025-03-12T18:18:53.934123', updated_at: '2025-03-12T18:20:00.000001' }],
      [second!.id, { created_at: '2025-03-12T18:18:53.934', updated_at: '2025-03-13' }],
      [third!.id, { created_at: '2025-03-12T20:03:53.5+01:45', updated_at: '2025-03-12T18:18:53.999999Z' }],
    ]);
    for (const [id, stamp] of stamps)
      sandbox.mutateListItem(study!.link_id, id, (item) => ({ ...item, ...stamp }));
    const { out, run } = await cliPipeline(sandbox, dir, 'tz', { env: { TZ: 'Asia/Kathmandu' } });
    const cli = await run();
    expect(cli.code, cli.stderr).toBe(0);
    const runs = join(out, 'tz', 'runs');
    const runDir = join(runs, (await readdir(runs)).find((name) => !name.startsWith('.'))!);

    const expected = new Map([
      [first!.id, ['2025-03-12T18:18:53.934123Z', '2025-03-12T18:20:00.000001Z', 1741803533934123n]],
      [second!.id, ['2025-03-12T18:18:53.934Z', '2025-03-13T00:00:00.000Z', 1741803533934000n]],
      [third!.id, ['2025-03-12T18:18:53.500Z', '2025-03-12T18:18:53.999999Z', 1741803533500000n]],
    ] as const);

    // CSV: the exact text, six digits where the service sent them.
    const csv = await readCsv(join(runDir, 'responses.csv'));
    const [header, ...records] = csv.records;
    const col = (name: string) => header!.indexOf(name);
    for (const [id, [created, updated]] of expected) {
      const record = records.find((r) => r[col('response_id')] === id)!;
      expect([record[col('created_at')], record[col('updated_at')]], id).toEqual([created, updated]);
    }

    // Parquet: TIMESTAMP(MICROS, UTC), read back to the microsecond by hyparquet and DuckDB.
    const file = await asyncBufferFromFile(join(runDir, 'responses.parquet'));
    const metadata = await parquetMetadataAsync(file);
    const created = metadata.schema.find((element) => element.name === 'created_at')!;
    expect(created.logical_type).toEqual({ type: 'TIMESTAMP', isAdjustedToUTC: true, unit: 'MICROS' });
    const rows = await parquetReadObjects({
      file,
      parsers: { timestampFromMicroseconds: (micros: bigint) => micros },
    });
    for (const [id, [, , micros]] of expected) {
      expect(rows.find((row) => row.response_id === id)?.created_at, id).toBe(micros);
    }
    const inRun = await duckMicros(join(runDir, 'responses.parquet'), 'created_at');
    const inCurrent = await duckMicros(
      join(out, 'tz', 'current', 'responses', '*', '*.parquet'),
      'created_at',
      true,
    );
    for (const read of [inRun, inCurrent]) {
      expect(read).toHaveLength(4);
      expect(new Set(read.map((row) => row.id)).size).toBe(4);
      expect(read[0]!.type).toBe('TIMESTAMP WITH TIME ZONE');
      for (const [id, [, , micros]] of expected) {
        expect(read.find((row) => row.id === id)?.us, id).toBe(String(micros));
      }
    }
    const updated = await duckMicros(
      join(out, 'tz', 'current', 'responses', '*', '*.parquet'),
      'updated_at',
      true,
    );
    expect(updated.find((row) => row.id === first!.id)?.us).toBe('1741803600000001');
    expect((await verifyRun(runDir)).problems).toEqual([]);
    // The Frictionless reader casts every CSV timestamp, six digits included, with the declared format.
    const frictionless = await validateDataPackage(runDir);
    expect(frictionless.errors).toEqual([]);
    expect(frictionless.read.responses).toBe(4);

    // --since without a zone is UTC too: the service is asked from 18:19 UTC, not 12:34.
    const from = sandbox.requests.length;
    const since = await run('--since', '2025-03-12T18:19:00');
    expect([0, 3]).toContain(since.code);
    const listings = sandbox.requests.slice(from).filter((r) => r.path.includes('updated_since='));
    expect(listings.length).toBeGreaterThan(0);
    for (const request of listings) {
      expect(new URL(request.path, 'http://x').searchParams.get('updated_since')).toBe(
        '2025-03-12T18:19:00.000Z',
      );
    }
  });
});

it('the later-fetched copy replaces the stale one in current/ when the service re-stamps it earlier (2099 corrected, 1970)', async () => {
  await withTempDir(async (dir) => {
    const own = await startSandbox({ seed: 84, studies: 1, responses: 4 });
    try {
      const [study] = own.studies();
      const link = study!.link_id;
      const [future, epoch] = own.responses(link);
      own.mutateListItem(link, future!.id, (item) => ({ ...item, updated_at: '2099-01-01T00:00:00Z' }));
      own.mutateListItem(link, epoch!.id, (item) => ({ ...item, updated_at: '2025-06-01T00:00:00Z' }));
      const { out, run } = await cliPipeline(own, dir, 'test');
      const first = await run();
      expect(first.code, first.stderr).toBe(0);

      // The service corrects the 2099 stamp and resets the other to 1970, with new content.
      own.mutateListItem(link, future!.id, (item) => ({
        ...item,
        updated_at: '2025-07-01T00:00:00Z',
        short_transcript: 'corrected copy',
      }));
      own.mutateListItem(link, epoch!.id, (item) => ({
        ...item,
        updated_at: '1970-01-01T00:00:00Z',
        short_transcript: 'reset copy',
      }));
      // Its internal clock says they changed now, so an incremental run lists them.
      own.touchResponse(link, future!.id);
      own.touchResponse(link, epoch!.id);
      const second = await run();
      expect(second.code, second.stderr).toBe(0);
      expect((await verifyRun(second.runDir)).problems).toEqual([]);
      // The run's own Parquet holds the two corrected copies, to the microsecond.
      const inRun = await duckdb((query) =>
        query(
          `select response_id, short_transcript, epoch_us(updated_at)::varchar as us from read_parquet('${join(second.runDir, 'responses.parquet')}') order by us`,
        ),
      );
      expect(inRun).toEqual([
        { response_id: epoch!.id, short_transcript: 'reset copy', us: '0' },
        { response_id: future!.id, short_transcript: 'corrected copy', us: '1751328000000000' },
      ]);

      const rows = await duckdb((query) =>
        query(
          `select response_id, short_transcript, epoch_us(updated_at)::varchar as us from read_parquet('${join(out, 'test', 'current', 'responses', '*', '*.parquet')}', hive_partitioning = true) order by response_id`,
        ),
      );
      expect(rows).toHaveLength(4);
      expect(new Set(rows.map((r) => r.response_id)).size).toBe(4);
      const byId = new Map(rows.map((r) => [r.response_id, r]));
      expect(byId.get(future!.id)).toMatchObject({
        short_transcript: 'corrected copy',
        us: '1751328000000000',
      });
      expect(byId.get(epoch!.id)).toMatchObject({ short_transcript: 'reset copy', us: '0' });
    } finally {
      await own.close();
    }
  });
});
