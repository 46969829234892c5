// biome-ignore-all lint/suspicious/noTemplateCurlyInString: pipeline files write ${VAR} literally
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { integerOption } from '../../src/cli/usage.ts';
import { loadPipeline, resolveApiKey } from '../../src/config/load.ts';
import { formats, settingBounds } from '../../src/config/schema.ts';
import { ConfigError } from '../../src/errors.ts';

let cwd: string;

beforeEach(async () => {
  cwd = await mkdtemp(path.join(tmpdir(), 'study-export-config-'));
  await mkdir(path.join(cwd, 'pipelines'));
});

afterEach(async () => {
  await rm(cwd, { recursive: true, force: true });
});

async function writePipeline(name: string, text: string): Promise<void> {
  await writeFile(path.join(cwd, 'pipelines', `${name}.yaml`), text);
}

async function loadError(name: string, env: NodeJS.ProcessEnv = {}): Promise<ConfigError> {
  const error = await loadPipeline({ pipeline: name, cwd, env }).then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(ConfigError);
  return error as ConfigError;
}

describe('loadPipeline: finding the file', () => {
  it('reads ./pipeline.yaml by default and applies the schema defaults', async () => {
    await writeFile(path.join(cwd, 'pipeline.yaml'), 'name: default-one\n');
    const { config, file } = await loadPipeline({ cwd, env: {} });
    expect(file).toBe('pipeline.yaml');
    expect(config.name).toBe('default-one');
    expect(config.source.base_url).toBe('sandbox');
    expect(config.source.per_page).toBe(1000);
    expect(config.output.formats).toEqual(['csv', 'parquet']);
    expect(config.media.video).toBe('mp4');
  });

  it('reads --config FILE relative to cwd', async () => {
    await writeFile(path.join(cwd, 'other.yml'), 'name: other\nincremental: false\n');
    const { config, file } = await loadPipeline({ config: 'other.yml', cwd, env: {} });
    expect(file).toBe('other.yml');
    expect(config.incremental).toEqual({
      enabled: false,
      reconcile_every: '7d',
      reconcile_max_fraction: 0.2,
    });
  });

  it('incremental as a section: reconcile_every a duration, reconcile_max_fraction a share', async () => {
    await writeFile(
      path.join(cwd, 'other.yml'),
      'name: other\nincremental:\n  reconcile_every: 12h\n  reconcile_max_fraction: 0.5\n',
    );
    const { config } = await loadPipeline({ config: 'other.yml', cwd, env: {} });
    expect(config.incremental).toEqual({
      enabled: true,
      reconcile_every: '12h',
      reconcile_max_fraction: 0.5,
    });
    await writeFile(
      path.join(cwd, 'bad.yml'),
      'name: bad\nincremental:\n  reconcile_every: 7 days\n  reconcile_max_fraction: 2\n',
    );
    const error = await loadPipeline({ config: 'bad.yml', cwd, env: {} }).catch((caught) => caught);
    expect(error.message).toContain(
      'bad.yml: incremental.reconcile_every: expected a duration such as 7d, 12h or 30m, or 0 for never, found "7 days"',
    );
    expect(error.message).toContain(
      'bad.yml: incremental.reconcile_max_fraction: expected a number from 0 to 1, found 2',
    );
  });

  it('names the missing pipeline and lists the available ones', async () => {
    await writePipeline('demo', 'name: demo\n');
    const error = await loadError('nope');
    expect(error.message).toContain('no pipeline named "nope"');
    expect(error.message).toContain(path.join('pipelines', 'nope.yaml'));
    expect(error.message).toContain('available: demo');
    expect(error.exitCode).toBe(2);
  });

  it('says when the --config file does not exist', async () => {
    const error = await loadPipeline({ config: 'missing.yaml', cwd, env: {} }).catch((caught) => caught);
    expect(error).toBeInstanceOf(ConfigError);
    expect(error.message).toBe('missing.yaml: cannot read the pipeline file (no such file)');
  });
});

describe('loadPipeline: interpolation', () => {
  const text = 'name: x\nsource:\n  base_url: ${BASE:-sandbox}\n  per_page: ${PER_PAGE:-250}\n';

  it('uses the default when the variable is unset or empty', async () => {
    await writePipeline('x', text);
    for (const env of [{}, { BASE: '' }]) {
      const { config } = await loadPipeline({ pipeline: 'x', cwd, env });
      expect(config.source.base_url).toBe('sandbox');
      expect(config.source.per_page).toBe(250);
    }
  });

  it('uses the variable when set, inside longer strings too', async () => {
    await writePipeline(
      'x',
      'name: x\nsource:\n  base_url: https://${HOST}/v1\n  per_page: ${PER_PAGE:-250}\n',
    );
    const { config } = await loadPipeline({
      pipeline: 'x',
      cwd,
      env: { HOST: 'api.example.com', PER_PAGE: '40' },
    });
    expect(config.source.base_url).toBe('https://api.example.com/v1');
    expect(config.source.per_page).toBe(40);
  });

  it('names the file, the key path and the variable when a variable without default is missing', async () => {
    await writePipeline('x', 'name: x\nsource:\n  base_url: ${STUDY_HOST}\n');
    const error = await loadError('x');
    expect(error.message).toMatch(
      /^pipelines[/\\]x\.yaml: source\.base_url: environment variable STUDY_HOST is not set/,
    );
  });

  it('rejects a malformed placeholder', async () => {
    await writePipeline('x', 'name: x\nstudies:\n  include: ["${1BAD}"]\n');
    const error = await loadError('x');
    expect(error.message).toContain('studies.include[0]: "${1BAD}" is not a valid placeholder');
  });
});

describe('loadPipeline: validation messages name file, key, expected and found', () => {
  it('unknown key at the top', async () => {
    await writePipeline('x', 'name: x\nsorce:\n  per_page: 10\n');
    const error = await loadError('x');
    expect(error.message).toBe(
      `${path.join('pipelines', 'x.yaml')}: unknown key "sorce" (did you mean source? expected one of: name, source, studies, incremental, output, media, schema, archive, privacy)`,
    );
  });

  it('unknown nested key', async () => {
    await writePipeline('x', 'name: x\nmedia:\n  videos: both\n');
    const error = await loadError('x');
    expect(error.message).toContain(
      'media: unknown key "videos" (did you mean video? expected one of: enabled, video, concurrency, deadline_ms, max_file_mib)',
    );
  });

  it('schema.on_change other than warn or fail (exit 2)', async () => {
    await writePipeline('x', 'name: x\nschema:\n  on_change: stop\n');
    const error = await loadError('x');
    expect(error.message).toBe(
      `${path.join('pipelines', 'x.yaml')}: schema.on_change: expected one of: warn, fail, found "stop"`,
    );
    expect(error.exitCode).toBe(2);
  });

  it('wrong type', async () => {
    await writePipeline('x', 'name: x\nsource:\n  per_page: ten\n');
    const error = await loadError('x');
    expect(error.message).toBe(
      `${path.join('pipelines', 'x.yaml')}: source.per_page: expected an integer from 1 to 10000, found "ten"`,
    );
  });

  it('a base_url ending in /api/public (every request would 404 at /api/public/api/public)', async () => {
    await writePipeline('x', 'name: x\nsource:\n  base_url: https://studies.example.com/api/public/\n');
    const error = await loadError('x');
    expect(error.message).toBe(
      `${path.join('pipelines', 'x.yaml')}: source.base_url: expected the service's root URL without /api/public (the tool adds it to every request), found "https://studies.example.com/api/public/"`,
    );
    expect(error.exitCode).toBe(2);
  });

  it('out-of-range number, bad enum in a list, bad boolean: every problem listed', async () => {
    await writePipeline(
      'x',
      'name: x\nsource:\n  retries: -1\noutput:\n  formats: [csv, ods]\nincremental: "yes"\n',
    );
    const lines = (await loadError('x')).message.split('\n');
    expect(lines).toHaveLength(3);
    expect(lines).toContain(
      `${path.join('pipelines', 'x.yaml')}: source.retries: expected an integer from 0 to 20, found -1`,
    );
    expect(lines).toContain(
      `${path.join('pipelines', 'x.yaml')}: output.formats[1]: expected one of: ${formats.join(', ')}, found "ods"`,
    );
    expect(lines).toContain(
      `${path.join('pipelines', 'x.yaml')}: incremental: expected true or false, or a mapping with keys: enabled, reconcile_every, reconcile_max_fraction, found "yes"`,
    );
  });

  it('every numeric setting has both bounds in the file, the same as its flag', async () => {
    const keys: [string, string, { min: number; max: number }][] = [
      ['source', 'per_page', settingBounds.per_page],
      ['source', 'concurrency', settingBounds.concurrency],
      ['source', 'timeout_ms', settingBounds.timeout_ms],
      ['source', 'retries', settingBounds.retries],
      ['source', 'max_pages', settingBounds.max_pages],
      ['source', 'max_retry_after_s', settingBounds.max_retry_after_s],
      ['media', 'concurrency', settingBounds.media_concurrency],
    ];
    for (const [section, key, bounds] of keys) {
      for (const value of [bounds.min - 1, bounds.max + 1]) {
        await writePipeline('x', `name: x\n${section}:\n  ${key}: ${value}\n`);
        expect((await loadError('x')).message).toBe(
          `${path.join('pipelines', 'x.yaml')}: ${section}.${key}: expected an integer from ${bounds.min} to ${bounds.max}, found ${value}`,
        );
      }
      await writePipeline('x', `name: x\n${section}:\n  ${key}: ${bounds.max}\n`);
      const { config } = await loadPipeline({ pipeline: 'x', cwd, env: {} });
      expect((config as unknown as Record<string, Record<string, number>>)[section]?.[key]).toBe(bounds.max);
    }
    // The flag that overrides source.concurrency reads the same bounds.
    const flag = integerOption('concurrency', settingBounds.concurrency.min, settingBounds.concurrency.max);
    expect(() => flag(settingBounds.concurrency.max + 1)).toThrow(
      `--concurrency: expected an integer from 1 to 256, found "257"`,
    );
  });

  it('a missing name and a name that cannot be a folder', async () => {
    await writePipeline('x', 'incremental: true\n');
    expect((await loadError('x')).message).toContain(
      'name: expected a non-empty string, found nothing (the key is missing)',
    );
    await writePipeline('x', 'name: my pipeline\n');
    expect((await loadError('x')).message).toContain(
      'name: expected letters, digits, ".", "_" or "-" (it names a folder), found "my pipeline"',
    );
  });

  it('an empty file', async () => {
    await writePipeline('x', '# nothing here\n');
    expect((await loadError('x')).message).toMatch(
      /x\.yaml: expected a mapping with keys: name, source.*found nothing/,
    );
  });

  it('YAML syntax error with line and column', async () => {
    await writePipeline('x', 'name: x\noutput:\n  formats: [csv, parquet\nmedia: {}\n');
    const error = await loadError('x');
    expect(error.message).toMatch(/^pipelines[/\\]x\.yaml: line \d+, column \d+: invalid YAML: /);
  });

  it('names the line to fix: a key indented too deep, an unclosed [ or quote, an unknown alias', async () => {
    const cases: [string, string][] = [
      // The library notices these on the line before (the value the deeper key continues)...
      [
        'name: x\nsource:\n  base_url: sandbox\n    retries: 1\noutput:\n  dir: out\n',
        'line 4, column 5: invalid YAML: this key is indented deeper than the keys above it',
      ],
      // ...on the line after (the next key), and at the end of the file.
      [
        'name: x\noutput:\n  formats: [csv, parquet\n  dir: out\n',
        'line 3, column 12: invalid YAML: the [ opened here is not closed with ]',
      ],
      [
        'name: x\nsource:\n  base_url: "sandbox\n  retries: 1\noutput:\n  dir: out\n',
        'line 3, column 13: invalid YAML: the quote opened here is not closed',
      ],
      ['name: x\nstudies:\n  include: *all\n', 'line 3, column 12: invalid YAML: Unresolved alias'],
      // Where the library is right, its own place and words.
      ['name: x\nsource:\n  per_page 10\n  retries: 1\n', 'line 3, column 3: invalid YAML: Implicit keys'],
    ];
    for (const [text, expected] of cases) {
      await writePipeline('x', text);
      expect((await loadError('x')).message).toContain(`${path.join('pipelines', 'x.yaml')}: ${expected}`);
    }
  });

  it('names the key a misspelt one meant, and the pipeline a misspelt name meant', async () => {
    await writePipeline('x', 'name: x\nsource:\n  per_pag: 10\noutput:\n  formts: [csv]\n');
    const message = (await loadError('x')).message;
    expect(message).toContain(
      'source: unknown key "per_pag" (did you mean per_page? expected one of: base_url',
    );
    expect(message).toContain('output: unknown key "formts" (did you mean formats? expected one of: dir');
    await writePipeline('nightly', 'name: nightly\n');
    expect((await loadError('nigthly')).message).toBe(
      `no pipeline named "nigthly": ${path.join('pipelines', 'nigthly.yaml')} not found (available: nightly, x); did you mean --pipeline nightly?`,
    );
  });

  it('duplicate keys are a YAML error', async () => {
    await writePipeline('x', 'name: x\nname: y\n');
    const error = await loadError('x');
    expect(error.message).toMatch(/line 2, column 1: invalid YAML: .*unique/i);
  });
});

describe('resolveApiKey', () => {
  it('needs no key for the sandbox', async () => {
    await writePipeline('x', 'name: x\n');
    const { config } = await loadPipeline({ pipeline: 'x', cwd, env: {} });
    expect(resolveApiKey(config, {}, 'pipelines/x.yaml')).toBeUndefined();
  });

  it('reads the variable named by api_key_env, and names it when missing', async () => {
    await writePipeline('x', 'name: x\nsource:\n  base_url: http://127.0.0.1:1\n  api_key_env: MY_KEY\n');
    const { config } = await loadPipeline({ pipeline: 'x', cwd, env: {} });
    expect(resolveApiKey(config, { MY_KEY: 'k-123' }, 'pipelines/x.yaml')).toBe('k-123');
    expect(() => resolveApiKey(config, {}, 'pipelines/x.yaml')).toThrow(ConfigError);
    expect(() => resolveApiKey(config, { MY_KEY: ' ' }, 'pipelines/x.yaml')).toThrow(
      /^pipelines\/x\.yaml: source\.api_key_env: environment variable MY_KEY is not set/,
    );
  });
});

describe('the shipped pipeline files', () => {
  const root = path.resolve(import.meta.dirname, '../..');
  const real = { STUDY_API_BASE_URL: 'https://api.example.com' };

  it('pipelines/demo.yaml runs the embedded sandbox', async () => {
    const { config } = await loadPipeline({ pipeline: 'demo', cwd: root, env: {} });
    expect(config.name).toBe('demo');
    expect(config.source.base_url).toBe('sandbox');
  });

  it('pipeline.yaml runs against the sandbox by default and follows STUDY_API_BASE_URL', async () => {
    expect((await loadPipeline({ cwd: root, env: {} })).config.source.base_url).toBe('sandbox');
    const loaded = await loadPipeline({ cwd: root, env: real });
    expect(loaded.config.source.base_url).toBe('https://api.example.com');
  });

  for (const name of ['nightly-incremental', 'archive-with-media']) {
    it(`pipelines/${name}.yaml needs STUDY_API_BASE_URL: never the sandbox by mistake`, async () => {
      const { config } = await loadPipeline({ pipeline: name, cwd: root, env: real });
      expect(config.name).toBe(name);
      expect(config.source.base_url).toBe('https://api.example.com');
      const error = await loadPipeline({ pipeline: name, cwd: root, env: {} }).catch((caught) => caught);
      expect(error.message).toContain(
        `${name}.yaml: source.base_url: environment variable STUDY_API_BASE_URL is not set`,
      );
    });
  }

  it('nightly-incremental is incremental; archive-with-media archives video both ways, not incrementally', async () => {
    const nightly = await loadPipeline({ pipeline: 'nightly-incremental', cwd: root, env: real });
    expect(nightly.config.incremental.enabled).toBe(true);
    expect(nightly.config.output.formats).toEqual(['csv', 'parquet']);
    const { config } = await loadPipeline({
      pipeline: 'archive-with-media',
      cwd: root,
      env: { ...real, STUDY_ID: 'abc' },
    });
    expect(config.media).toMatchObject({ enabled: true, video: 'both' });
    expect(config.incremental.enabled).toBe(false);
    expect(config.studies.include).toEqual(['abc']);
  });
});
