// Integration: git's words, work parked for review, landing on the person's branch, and the lane that serializes.
// What the rest of foreman uses from this folder; its other files are its own.

export {
  buildMessage,
  byPath,
  changesByPath,
  chunks,
  describeGitFailure,
  expectObjectId,
  failureOf,
  type FileChange,
  type GitFailure,
  hashAlgorithmOf,
  indexInfo,
  isObjectId,
  isTrailerKey,
  NO_HOOKS,
  noCommitLine,
  normalizeRepoPath,
  parseRaw,
  parseStatus,
  parseStatusV2,
  parseTrailers,
  splitNul,
  type StatusEntry,
  type StatusV2Entry,
  type Trailer,
  type TrailerList,
} from './git-text.ts';
export {
  describeLandingProblem,
  type Entry,
  type FileObservation,
  type IndexObservation,
  judgeLanding,
  type Landed,
  type LandingProblem,
  landingProblemSentence,
  type LandMode,
  type PathObservation,
} from './landing.ts';
export { Lane } from './lane.ts';
export { type ChangedFile, changeSummary, type ParkedChange, parseChangedFiles } from './parked-change.ts';
