/**
 * What a package handed to someone else says about the respondents' identities, worded once
 * for its README.md (first lines), report.html (first screen) and datapackage.json: whether the
 * pipeline's privacy profile was applied, the profile as stated (never the secret, never the
 * content of the terms file) and how many replacements of each kind were made; never an
 * original value.
 */

export interface PackagePrivacy {
  /**
   * profile: de-identified by the pipeline's privacy: profile; identified: made with
   * --identified although there is one; none: the pipeline has no privacy: profile.
   */
  applied: 'profile' | 'identified' | 'none';
  /** The profile as the package may state it: rules and detector names, no secret, no terms. */
  profile?: unknown;
  /** Replacements made in the package's rows, by kind (email, phone, name, attribute, id, …). */
  replacements?: Readonly<Record<string, number>>;
}

/** The package still holds the respondents' identities. */
export function identifies(privacy: PackagePrivacy): boolean {
  return privacy.applied !== 'profile';
}

/** The warning a package that identifies people opens with; null for a de-identified one. */
export function privacyHeadline(privacy: PackagePrivacy): string | null {
  if (privacy.applied === 'identified')
    return 'IDENTIFIED: made with --identified. This package holds the respondents as exported: their URL parameters, the response ids and everything they said. Hand it only to people allowed to see who they are.';
  if (privacy.applied === 'none')
    return 'IDENTIFIED: the pipeline has no privacy: profile, so this package holds the respondents as exported: their URL parameters, the response ids and everything they said. Hand it only to people allowed to see who they are.';
  return null;
}

/** The replacements as "3 email, 1 phone" (kinds in name order); "none" when there were none. */
export function replacementSummary(replacements: Readonly<Record<string, number>> = {}): string {
  const counted = Object.entries(replacements)
    .filter(([, n]) => n > 0)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return counted.length === 0 ? 'none' : counted.map(([kind, n]) => `${n} ${kind}`).join(', ');
}

/** The statement in plain sentences, first the headline where there is one. */
export function privacySentences(privacy: PackagePrivacy): string[] {
  const headline = privacyHeadline(privacy);
  if (headline) return [headline];
  return [
    "De-identified by the pipeline's privacy: profile: URL parameters kept, dropped or replaced by keyed pseudonyms as it says, response ids pseudonymised unless it keeps them, and the text detectors' and listed terms' matches replaced by tags such as [EMAIL-3] (the same text gets the same tag throughout the study).",
    `Replacements in this package: ${replacementSummary(privacy.replacements)}.`,
    'What the rules cannot catch stays: a name not in the terms list, an identifying story, a rare combination of attributes. This is pseudonymised data, not anonymous data.',
  ];
}
