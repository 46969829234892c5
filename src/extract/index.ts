/** The extract stage: validated records as async iterables, everything else to the sinks. */
export { type DetailResult, type FetchDetailsOptions, fetchDetails } from './details.ts';
export {
  type KnownOwners,
  keyedAnswers,
  ownedElsewhere,
  ResponseClaims,
  type ResponseOwner,
} from './keys.ts';
export type { ListingStats, ListResponsesOptions, PageGate } from './listing-options.ts';
export { listResponses, type ResponseListing } from './responses.ts';
export {
  globToRegExp,
  listStudies,
  type StudySelection,
  selectStudies,
} from './studies.ts';
