// Limits: the limiter that holds workers under rate and usage limits, what a limit's words say, and time limits.
// What the rest of foreman uses from this folder; its other files are its own.

export { readLimitText } from './limit-text.ts';
export { accountsWaitWords, clockTime, handOutLimit, lastLimits, type LimitState, limitWords, roundLimit, type SessionLimit } from './limit-words.ts';
export {
  allowed,
  holding,
  type Limiter,
  type LimiterSettings,
  type LimitKind,
  newLimiter,
  overdue,
  type Refusal,
  refused,
  served,
  settleRound,
} from './limiter.ts';
export { describeTimeLimitHit, formatLimit, type TimeLimit } from './time-limit.ts';
