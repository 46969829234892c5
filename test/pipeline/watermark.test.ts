import { describe, expect, it } from 'vitest';
import { advanceState, clockSkewWarning, effectiveSince } from '../../src/pipeline/watermark.ts';
import { emptyState, type StudyState } from '../../src/publish/state.ts';

const study = (watermark: string | null, media?: string | null): StudyState => ({
  link_id: 's',
  watermark,
  ...(media === undefined ? {} : { media_watermark: media }),
  last_run: 'r',
  last_run_at: '2026-01-01T00:00:00.000Z',
});
const incremental = { incremental: true };

describe('the media watermark', () => {
  it('a run with media starts where recordings were last archived, when that is earlier', () => {
    const owed = study('2026-03-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z');
    expect(effectiveSince(owed, { ...incremental, media: true })).toBe('2026-01-01T00:00:00.000Z');
    expect(effectiveSince(owed, { ...incremental, media: false })).toBe('2026-03-01T00:00:00.000Z');
    expect(
      effectiveSince(study('2026-03-01T00:00:00.000Z', null), { ...incremental, media: true }),
    ).toBeNull();
    // State written before media_watermark existed: the recordings are taken as archived.
    expect(effectiveSince(study('2026-03-01T00:00:00.000Z'), { ...incremental, media: true })).toBe(
      '2026-03-01T00:00:00.000Z',
    );
  });

  it('moves only with a run with media that covered everything since it', () => {
    const startedAt = Date.parse('2026-04-01T00:15:00.000Z');
    const newMark = '2026-04-01T00:00:00.000Z';
    const finished = (since: string | null) => [{ study_id: 'id', link_id: 's', since, lossless: true }];
    const first = advanceState(emptyState(), finished(null), { id: 'r1', startedAt, media: false });
    expect(first.studies.id).toMatchObject({ watermark: newMark, media_watermark: null });
    const owed = {
      version: 1 as const,
      studies: { id: study('2026-03-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z') },
    };
    // From the data watermark (later than the media one): data moves, media stays owed.
    const partial = advanceState(owed, finished('2026-03-01T00:00:00.000Z'), {
      id: 'r2',
      startedAt,
      media: true,
    });
    expect(partial.studies.id).toMatchObject({
      watermark: newMark,
      media_watermark: '2026-01-01T00:00:00.000Z',
    });
    const whole = advanceState(owed, finished('2026-01-01T00:00:00.000Z'), {
      id: 'r3',
      startedAt,
      media: true,
    });
    expect(whole.studies.id).toMatchObject({ watermark: newMark, media_watermark: newMark });
    const lossy = advanceState(owed, [{ ...finished(null)[0]!, lossless: false }], {
      id: 'r4',
      startedAt,
      media: true,
    });
    expect(lossy.studies.id).toEqual(owed.studies.id);
  });
});

describe('the watermark on the earlier clock', () => {
  const startedAt = Date.parse('2026-04-01T12:15:00.000Z');
  const finished = [{ study_id: 'id', link_id: 's', since: null, lossless: true }];
  const mark = (serviceSkewMs: number | null) =>
    advanceState(emptyState(), finished, { id: 'r', startedAt, media: true, serviceSkewMs }).studies.id
      ?.watermark;

  it("follows a service clock behind this machine's, and this machine's when the service is ahead", () => {
    expect(mark(null)).toBe('2026-04-01T12:00:00.000Z');
    expect(mark(-60 * 60_000)).toBe('2026-04-01T11:00:00.000Z');
    expect(mark(60 * 60_000)).toBe('2026-04-01T12:00:00.000Z');
    expect(mark(-800)).toBe('2026-04-01T11:59:59.200Z');
  });

  it('warns only beyond the 15-minute margin, naming the direction', () => {
    expect(clockSkewWarning(null)).toBeNull();
    expect(clockSkewWarning(-15 * 60_000)).toBeNull();
    expect(clockSkewWarning(-61 * 60_000)?.message).toMatch(/61 minutes behind this machine's/);
    expect(clockSkewWarning(20 * 60_000)?.message).toMatch(/20 minutes ahead of this machine's/);
  });
});
