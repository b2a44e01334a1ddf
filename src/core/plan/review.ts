// A person's review of a task's parked work, pure. `plan revise` opens a round: the task goes back
// to pending with the person's words, and its attempts start from the parked work (its workspace
// holds it; its work counts from the parked work's own start), spending none of the task's
// attempts. The round ends when its revision is verified and parked again, or when its attempts
// run out: then the earlier work awaits approval again, with the round's failure. Nothing
// integrates until a person approves.

import { DEFAULT_REVIEW_ROUNDS, type Plan, type Task, type TaskReview } from './plan.ts';

/** The task's review round under way, or null. */
export function openReview(task: Task): TaskReview | null {
  const last = task.reviews?.[task.reviews.length - 1];
  return last?.outcome === 'open' ? last : null;
}

/** How many rounds of review a task of `plan` may have. */
export const reviewRoundsAllowed = (plan: Plan): number => plan.context?.maxReviewRounds ?? DEFAULT_REVIEW_ROUNDS;

/** Where an attempt starts when not at the integration tip: a commit foreman kept, and the commit the work it holds started from. */
export interface EarlierWork {
  commit: string;
  base: string;
}

/** Where the next attempt of a task in a review round starts: its parked work, or null when it is in none. */
export function revisionStart(task: Task): EarlierWork | null {
  const review = openReview(task);
  return review === null ? null : { commit: review.commit, base: review.base };
}

/** The round a review is (1 for the first), and how a person reads it. */
export function describeReview(review: TaskReview, round: number): string {
  const took = review.attempts === undefined ? '' : `, ${review.attempts} attempt${review.attempts === 1 ? '' : 's'}`;
  const how =
    review.outcome === 'open'
      ? 'under way: its revision runs next'
      : review.outcome === 'parked'
        ? `revised${took}; the revision awaits approval`
        : `failed${took}: ${review.failure ?? 'its attempts ran out'}; the earlier work awaits approval again`;
  return `review round ${round} (${review.at}): ${how} — asked: ${JSON.stringify(review.feedback)}`;
}

/** Every review round of `task`, as `describeReview` words them. */
export const describeReviews = (task: Task): string[] => (task.reviews ?? []).map((review, i) => describeReview(review, i + 1));
