/** The transform stage: pure functions from validated payloads to table rows. */
export { type QuestionCandidate, QuestionRegistry } from './questions.ts';
export { type ResponseInput, type ResponseRows, responseRows } from './response.ts';
export { studyRow } from './study.ts';
