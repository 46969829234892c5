/**
 * What a package says about how it was made, in words for its first page and its metadata:
 * identified, or the profile's rules and the study's counts. Never the secret, never a term,
 * never an original value. Pure.
 */
import { type TagKind, tagKinds } from './detect.ts';
import type { ProfileStatement } from './profile.ts';
import type { StudyPrivacyCounts } from './study.ts';

/** How a package was made: identified, or de-identified by a profile, with the study's counts. */
export type HandoffPrivacy =
  | { identified: true }
  | { identified: false; profile: ProfileStatement; counts: StudyPrivacyCounts };

export const IDENTIFIED_NOTICE =
  "IDENTIFIED: this package keeps the respondents' identities (made with --identified): response ids, URL parameters, all they said and their recordings. Handle it as personal data.";
/** How a de-identified package's first paragraph begins (verify knows such a package by it). */
export const DEIDENTIFIED_MARK = "De-identified by the pipeline's privacy profile.";
export const RECORDINGS_NOTICE =
  'Its recordings identify people: voices and faces are not de-identified by the privacy profile.';

/** One line for bag-info.txt and similar one-line fields. */
export function privacySummary(privacy: HandoffPrivacy): string {
  if (privacy.identified) return 'identified (made with --identified; the respondents can be identified)';
  const { profile, counts } = privacy;
  const ids =
    profile.ids === 'keep' ? 'response ids kept' : `${counts.response_ids} response ids pseudonymised`;
  return `de-identified by a privacy profile: ${ids}; ${textCounts(counts)}; recordings ${profile.recordings === 'keep' ? 'kept (they identify people)' : 'left out'}`;
}

/** The paragraphs a package's first page (index.html, README.md, a project's description) shows. */
export function privacyParagraphs(privacy: HandoffPrivacy): string[] {
  if (privacy.identified) return [IDENTIFIED_NOTICE];
  const { profile, counts } = privacy;
  const rules = Object.entries(profile.attributes).map(([glob, rule]) => `${glob}: ${rule}`);
  const paragraphs = [
    `${DEIDENTIFIED_MARK} Response ids: ${profile.ids === 'keep' ? 'kept' : 'replaced by keyed pseudonyms (HMAC-SHA-256; the key is not in this package, and without it a pseudonym can be neither reversed nor confirmed)'}. URL parameters: ${rules.length > 0 ? `${rules.join(', ')}; ` : ''}every other key dropped (${counts.attributes.kept} kept, ${counts.attributes.pseudonymised} pseudonymised, ${counts.attributes.dropped} dropped).`,
    `Personal data in the texts was replaced by tags such as [EMAIL-1] and [NAME-2] (the same thing the same tag throughout the study), found by the detectors ${profile.detect.join(', ') || 'none'}${profile.terms ? `, ${profile.terms.count} terms listed in ${profile.terms.file}` : ''} and ${profile.patterns} pattern${profile.patterns === 1 ? '' : 's'}: ${textCounts(counts)}.`,
    profile.recordings === 'keep'
      ? RECORDINGS_NOTICE
      : `Recordings are left out (${counts.recordings_excluded}): voices and faces are not de-identified by text rules.`,
    'The rules remove only what they find: a name not in the terms list, a story that tells who someone is, or a rare combination of answers can still identify a respondent.',
  ];
  return paragraphs;
}

function textCounts(counts: StudyPrivacyCounts): string {
  const parts = tagKinds
    .filter((kind: TagKind) => counts.text[kind] > 0)
    .map((kind) => `${counts.text[kind]} ${kind}`);
  return parts.length > 0 ? `replacements ${parts.join(', ')}` : 'no replacements in the texts';
}
