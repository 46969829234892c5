/**
 * The privacy profile (docs/privacy.md): keyed pseudonyms, the detectors of personal data in
 * text, a study's tags, and a study's rows de-identified. The one door of src/privacy; the
 * handoff reader (src/reader/handoff.ts) is the one place that applies it.
 */
export {
  type DetectorSet,
  findMatches,
  isPhoneNumber,
  kindOfDetector,
  type Match,
  type TagKind,
  tagKinds,
  termsPattern,
} from './detect.ts';
export { loadPrivacyProfile, type ProfileSource } from './load.ts';
export { attributeRule, type PrivacyProfile, type ProfileStatement, profileStatement } from './profile.ts';
export { keyedDigest, type PseudonymSubject, pseudonymOf } from './pseudonym.ts';
export { hostOf, type Leftover, PackageScan, scannable } from './scan.ts';
export {
  DEIDENTIFIED_MARK,
  type HandoffPrivacy,
  type IdentifiedBecause,
  identifiedNotice,
  type PackageHolds,
  privacyParagraphs,
  privacySummary,
  RECORDINGS_NOTICE,
  UNPROFILED,
} from './statement.ts';
export {
  type LinkageEntry,
  StudyDeidentifier,
  type StudyPrivacyCounts,
  seenColumns,
  textColumns,
} from './study.ts';
export { type KindCounts, StudyTags, zeroCounts } from './tags.ts';
