/**
 * The privacy profile as the handoff commands apply it: the pipeline file's `privacy:` section
 * with its secret, terms and patterns read and checked (load.ts does the reading), and what a
 * package may say about it: the rules, never the secret, never the terms themselves.
 */
import type { AttributeRule, PrivacyConfig } from '../config/schema.ts';
import { globToRegExp } from '../util/glob.ts';
import type { DetectorSet } from './detect.ts';

export interface PrivacyProfile {
  config: PrivacyConfig;
  /** The pseudonym secret (from the environment variable config.key_env); never written. */
  secret: Buffer;
  detectors: DetectorSet;
  /** The terms file as the pipeline file names it, and how many terms it holds. */
  terms: { file: string; count: number } | null;
}

/** The rule for a URL-parameter key: the first glob that matches it; unnamed keys are dropped. */
export function attributeRule(profile: PrivacyProfile, key: string): AttributeRule {
  for (const [glob, rule] of Object.entries(profile.config.attributes))
    if (globToRegExp(glob).test(key)) return rule;
  return 'drop';
}

/** What a package says about the profile it was made with (no secret, no term, no pattern). */
export interface ProfileStatement {
  key_env: string;
  ids: PrivacyConfig['ids'];
  attributes: Record<string, AttributeRule>;
  unnamed_attributes: 'drop';
  detect: string[];
  terms: { file: string; count: number } | null;
  patterns: number;
  recordings: PrivacyConfig['recordings'];
}

export function profileStatement(profile: PrivacyProfile): ProfileStatement {
  const { config } = profile;
  return {
    key_env: config.key_env,
    ids: config.ids,
    attributes: { ...config.attributes },
    unnamed_attributes: 'drop',
    detect: [...config.text.detect],
    terms: profile.terms,
    patterns: config.text.patterns.length,
    recordings: config.recordings,
  };
}
