/**
 * The profile read from what the pipeline file names: the secret from its environment variable,
 * the terms file (UTF-8, one a line, relative to the pipeline file), the patterns compiled. Each
 * problem is a ConfigError naming the variable, the file and line, or the pattern (exit 2), found
 * before anything is written.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { PrivacyConfig } from '../config/schema.ts';
import { ConfigError } from '../errors.ts';
import { termsPattern } from './detect.ts';
import type { PrivacyProfile } from './profile.ts';

export interface ProfileSource {
  /** The pipeline file as the user sees it (relative to cwd when inside it). */
  file: string;
  cwd: string;
  env: NodeJS.ProcessEnv;
}

export async function loadPrivacyProfile(
  config: PrivacyConfig,
  source: ProfileSource,
): Promise<PrivacyProfile> {
  const secret = source.env[config.key_env];
  if (secret === undefined || secret.trim() === '')
    throw new ConfigError(
      `${source.file}: privacy.key_env: environment variable ${config.key_env} is ${secret === undefined ? 'not set' : 'empty'}: the privacy profile reads its pseudonym secret from it (or give --identified for a package that keeps identities)`,
      { context: { file: source.file, operation: 'privacy profile' } },
    );
  const patterns = config.text.patterns.map((pattern, index) => compiled(pattern, index, source.file));
  let terms: PrivacyProfile['terms'] = null;
  let list: string[] = [];
  if (config.text.terms !== undefined) {
    const where = path.join(path.dirname(source.file), config.text.terms);
    list = await readTerms(path.resolve(source.cwd, where), where);
    terms = { file: config.text.terms, count: list.length };
  }
  return {
    config,
    secret: Buffer.from(secret, 'utf8'),
    detectors: { detect: config.text.detect, terms: termsPattern(list), patterns },
    terms,
  };
}

function compiled(pattern: string, index: number, file: string): RegExp {
  let expression: RegExp;
  try {
    expression = new RegExp(pattern, 'gu');
  } catch (cause) {
    throw new ConfigError(
      `${file}: privacy.text.patterns[${index}]: ${JSON.stringify(pattern)} is not a valid regular expression (${(cause as Error).message})`,
      { context: { file }, cause },
    );
  }
  if (expression.test(''))
    throw new ConfigError(
      `${file}: privacy.text.patterns[${index}]: ${JSON.stringify(pattern)} matches empty text; expected a pattern that matches what to replace`,
      { context: { file } },
    );
  expression.lastIndex = 0;
  return expression;
}

/** The terms: one a line, blank lines and lines starting with # left out; UTF-8 or an error naming the line. */
async function readTerms(absolute: string, shown: string): Promise<string[]> {
  let bytes: Buffer;
  try {
    bytes = await readFile(absolute);
  } catch (cause) {
    const missing = (cause as NodeJS.ErrnoException).code === 'ENOENT';
    throw new ConfigError(
      `${shown}: privacy.text.terms: cannot read the terms file (${missing ? 'no such file' : String(cause)})`,
      { context: { file: shown }, cause },
    );
  }
  const decoder = new TextDecoder('utf-8', { fatal: true });
  const terms: string[] = [];
  let start = 0;
  for (let line = 1; start <= bytes.length; line++) {
    const end = bytes.indexOf(0x0a, start);
    const stop = end === -1 ? bytes.length : end;
    let text: string;
    try {
      text = decoder.decode(bytes.subarray(start, stop));
    } catch (cause) {
      throw new ConfigError(`${shown}: line ${line}: not UTF-8; save the terms file as UTF-8`, {
        context: { file: shown },
        cause,
      });
    }
    const term = text.replace(/^\ufeff/, '').trim();
    if (term !== '' && !term.startsWith('#')) terms.push(term);
    if (end === -1) break;
    start = end + 1;
  }
  return terms;
}
