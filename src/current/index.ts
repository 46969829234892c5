/**
 * The current dataset's one door: code outside src/current/ imports from here alone. A run
 * stages its studies' rows (CurrentStaging) and prepares each bucket's new parts as its
 * studies end (CurrentPreparation); publishing drives the lifecycle (publishCurrent, then
 * settleCurrent once the run is committed; undoCurrent or repairCurrent for a run that
 * stopped part way); the output's reader (src/reader/) reads parts back.
 */

export type { CurrentContext, CurrentOutput, CurrentStudy, PreparedBucket } from './context.ts';
export { descriptorShard, writeCurrentDescriptor } from './descriptor.ts';
export { type CurrentErased, type CurrentErasure, currentHolders, eraseFromCurrent } from './erase.ts';
export { type FormatsFilled, filledParts, fillFormatGaps, findFormatGaps, hasGaps } from './formats.ts';
export { countCurrent, writeCurrentGuide } from './guide.ts';
export { heldResponses } from './held.ts';
export {
  publishCurrent,
  repairCurrent,
  repairPrepared,
  settleCurrent,
  undoCurrent,
} from './lifecycle.ts';
export { responseTables } from './merge.ts';
export { legacyName, migrateToBuckets } from './migrate.ts';
export { currentOwners, sharedWarning } from './owners.ts';
export { currentFormats } from './package.ts';
export { CurrentListing } from './partitions.ts';
export { newestPart, parsePartName, partitionName, partitionPath } from './parts.ts';
export { CurrentPreparation } from './schedule.ts';
export { CurrentStaging, stagingWriters } from './staging.ts';
export { studyFolderName, wideFolder, workbookFolder } from './wide.ts';
