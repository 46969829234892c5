import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { loadPipeline, parsePipelineConfig } from '../../src/config/load.ts';
import { pipelineTemplate } from '../../src/config/template.ts';
import { findMatches, loadPrivacyProfile, profileStatement } from '../../src/privacy/index.ts';
import { people, personalTerms } from '../../src/sandbox/personal.ts';
import { repoRoot } from '../helpers/cli.ts';

describe("the repository's pipeline file", () => {
  it('has a privacy: section whose terms file lists every person the sandbox plants', async () => {
    const { config, file } = await loadPipeline({ cwd: repoRoot, env: {} });
    expect(config.privacy).toBeDefined();
    const profile = await loadPrivacyProfile(config.privacy as never, {
      file,
      cwd: repoRoot,
      env: { STUDY_PSEUDONYM_KEY: 'k' },
    });
    const terms = (await readFile(join(repoRoot, 'privacy/terms.txt'), 'utf8')).split('\n');
    for (const term of personalTerms) expect(terms).toContain(term);
    expect(profile.terms?.count).toBe(new Set(personalTerms).size);
    // Every planted thing is found by one detector or another.
    for (const person of people)
      for (const value of [
        person.email,
        person.phone,
        person.url,
        person.name,
        person.employer,
        person.street,
      ])
        expect(findMatches(`said ${value} today`, profile.detectors), value).toHaveLength(1);
    // What a package may say: no secret, no term.
    const statement = JSON.stringify(profileStatement(profile));
    expect(statement).not.toContain('"k"');
    for (const term of personalTerms) expect(statement).not.toContain(term);
  });

  it("init's commented example parses once uncommented", () => {
    const text = pipelineTemplate({ name: 'x' });
    const block = text.slice(text.indexOf('# privacy:'));
    const uncommented = block
      .split('\n')
      .filter((line) => /^\s*# [a-z_]+:/.test(line))
      .map((line) => line.replace('# ', ''))
      .join('\n');
    const config = parsePipelineConfig({ name: 'x', ...YAML.parse(uncommented) }, 'x.yaml');
    expect(config.privacy?.attributes).toEqual({ 'utm_*': 'keep', id: 'pseudonymise' });
    expect(config.privacy?.text.terms).toBe('privacy/terms.txt');
  });
});
