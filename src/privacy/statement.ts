/**
 * What a package says about how it was made, in words for its first page and its metadata:
 * identified, or the profile's rules and the study's counts. Never the secret, never a term,
 * never an original value. Pure.
 */
import { type TagKind, tagKinds } from './detect.ts';
import type { ProfileStatement } from './profile.ts';
import type { StudyPrivacyCounts } from './study.ts';

/**
 * Why a package keeps identities: `--identified` was given, or the pipeline file has no
 * privacy: section, so there was no profile to apply.
 */
export type IdentifiedBecause = '--identified' | 'no privacy profile';

/** How a package was made: identified (and why), or de-identified by a profile, with the study's counts. */
export type HandoffPrivacy =
  | { identified: true; because: IdentifiedBecause }
  | { identified: false; profile: ProfileStatement; counts: StudyPrivacyCounts };

/** A package made without a profile because the pipeline file has none. */
export const UNPROFILED: HandoffPrivacy = { identified: true, because: 'no privacy profile' };

/** What a kind of package can hold: a share package never holds recordings. */
export interface PackageHolds {
  recordings: boolean;
}

/** How a de-identified package's first paragraph begins (verify knows such a package by it). */
export const DEIDENTIFIED_MARK = "De-identified by the pipeline's privacy profile.";
export const RECORDINGS_NOTICE =
  'Its recordings identify people: voices and faces are not de-identified by the privacy profile.';

/** The first page's warning of a package that keeps the respondents' identities. */
export function identifiedNotice(because: IdentifiedBecause, holds: PackageHolds): string {
  const why =
    because === '--identified'
      ? 'made with --identified'
      : 'the pipeline file has no privacy: section, so no privacy profile was applied';
  const what = holds.recordings
    ? 'response ids, URL parameters, all they said and their recordings'
    : 'response ids, URL parameters and all they said';
  return `IDENTIFIED: this package keeps the respondents' identities (${why}): ${what}. Handle it as personal data.`;
}

/** One line for bag-info.txt, a datapackage.json's description and similar one-line fields. */
export function privacySummary(privacy: HandoffPrivacy, holds: PackageHolds): string {
  if (privacy.identified)
    return `identified (${privacy.because === '--identified' ? 'made with --identified' : 'no privacy profile: the pipeline file has no privacy: section'}; the respondents can be identified)`;
  const { profile, counts } = privacy;
  const ids =
    profile.ids === 'keep' ? 'response ids kept' : `${counts.response_ids} response ids pseudonymised`;
  const recordings = holds.recordings
    ? `; recordings ${profile.recordings === 'keep' ? 'kept (they identify people)' : 'left out'}`
    : '';
  return `de-identified by a privacy profile: ${ids}; ${textCounts(counts)}${recordings}`;
}

/** The paragraphs a package's first page (index.html, README.md, a project's description) shows. */
export function privacyParagraphs(privacy: HandoffPrivacy, holds: PackageHolds): string[] {
  if (privacy.identified) return [identifiedNotice(privacy.because, holds)];
  const { profile, counts } = privacy;
  const rules = Object.entries(profile.attributes).map(([glob, rule]) => `${glob}: ${rule}`);
  const recordings = !holds.recordings
    ? []
    : profile.recordings === 'keep'
      ? [RECORDINGS_NOTICE]
      : [
          `Recordings are left out (${counts.recordings_excluded}): voices and faces are not de-identified by text rules.`,
        ];
  return [
    `${DEIDENTIFIED_MARK} Response ids: ${profile.ids === 'keep' ? 'kept' : 'replaced by keyed pseudonyms (HMAC-SHA-256; the key is not in this package, and without it a pseudonym can be neither reversed nor confirmed)'}. URL parameters: ${rules.length > 0 ? `${rules.join(', ')}; ` : ''}every other key dropped (${counts.attributes.kept} kept, ${counts.attributes.pseudonymised} pseudonymised, ${counts.attributes.dropped} dropped).`,
    `Personal data in the texts was replaced by tags such as [EMAIL-1] and [NAME-2] (the same thing the same tag throughout the study), found by the detectors ${profile.detect.join(', ') || 'none'}${profile.terms ? `, ${profile.terms.count} terms listed in ${profile.terms.file}` : ''} and ${profile.patterns} pattern${profile.patterns === 1 ? '' : 's'}: ${textCounts(counts)}.`,
    ...recordings,
    'The rules remove only what they find: a name not in the terms list, a story that tells who someone is, or a rare combination of answers can still identify a respondent.',
  ];
}

function textCounts(counts: StudyPrivacyCounts): string {
  const parts = tagKinds
    .filter((kind: TagKind) => counts.text[kind] > 0)
    .map((kind) => `${counts.text[kind]} ${kind}`);
  return parts.length > 0 ? `replacements ${parts.join(', ')}` : 'no replacements in the texts';
}
