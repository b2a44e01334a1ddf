// The text a worker receives. Built from the task alone (plus its blockers' results), so a
// resumed run rebuilds exactly the prompt an uninterrupted run would have sent.

import type { ReportedStatus, StatusLine } from './worker-run.ts';
import { clipMiddle } from '../format.ts';
import { attemptsOf, openReview, type Plan, statusOf, taskAt, writesOf } from '../plan/index.ts';

/** A line the designer may leave in a prompt to mark where dependency results go. */
const PLACEHOLDER = /^.*\[?dependency results\b.*(deferred|placeholder|appended|go here|will appear).*$/im;

const STATUS_LINE = /^(COMPLETED|FAILED|BLOCKED):(?:\s+(.*))?$/;
const STATUS_WORD = /^(COMPLETED|FAILED|BLOCKED)/;

export function dependencyResults(plan: Plan, index: number): string | null {
  const task = taskAt(plan.tasks, index);
  const lines = task.blockedBy
    .filter((d) => statusOf(taskAt(plan.tasks, d)) === 'completed')
    .map((d) => `- Task ${d} (${taskAt(plan.tasks, d).subject}): ${taskAt(plan.tasks, d).result ?? 'completed'}`);
  return lines.length > 0 ? `## Dependency results\n\nResults reported by the tasks this one builds on:\n${lines.join('\n')}` : null;
}

export interface PromptOptions {
  maxAttempts: number;
  /**
   * The attempt starts from earlier work (a review round's parked work, or its own candidate work
   * the gate blamed): its workspace holds it, and this is its diff against where it started.
   */
  workSoFar?: string;
}

/** The most of the work so far's diff a prompt carries (the workspace has all of it). */
export const WORK_SO_FAR_MAX = 30_000;

export function workerPrompt(plan: Plan, index: number, options: PromptOptions): string {
  const task = taskAt(plan.tasks, index);
  let body = task.prompt ?? task.description ?? task.subject;
  const deps = dependencyResults(plan, index);
  if (deps) body = PLACEHOLDER.test(body) ? body.replace(PLACEHOLDER, () => deps) : `${body}\n\n${deps}`;

  const sections = [body.trimEnd()];
  const review = openReview(task);
  if (review !== null) sections.push(reviewBlock(review.feedback));
  const attempt = attemptsOf(task) + 1;
  if (attempt > 1) sections.push(retryBlock(plan, index, attempt, options.maxAttempts, options.workSoFar !== undefined));
  if (options.workSoFar !== undefined) sections.push(workSoFarBlock(options.workSoFar, review !== null));
  sections.push(rules(plan, index));
  return `${sections.join('\n\n')}\n`;
}

/**
 * What a resumed worker is told (`claude -p --resume <session>`): Claude Code appends it to the
 * conversation the limit cut off, after its last tool results (CLI-NOTES.md).
 */
export function resumePrompt(reason: string): string {
  return [
    `Your last request to the API did not go through (${reason}), so your work stopped there; the API answers again now.`,
    'Carry on with your task exactly where you left off: your files are as you left them.',
    'End your reply with the final status line your task asks for (COMPLETED: / FAILED: / BLOCKED:).',
    '',
  ].join('\n');
}

/** A person reviewed the task's work and asked for changes: their words, verbatim, in a section of their own. */
function reviewBlock(feedback: string): string {
  return [
    '## Changes requested in review',
    '',
    'A person reviewed the work done on this task so far and asks for these changes, in their words:',
    '',
    ...feedback.split('\n').map((line) => `> ${line}`.trimEnd()),
    '',
    'Make them on top of the work so far: keep what they did not ask to change.',
  ].join('\n');
}

/** The earlier work the attempt's workspace holds, as a diff against where that work started. */
function workSoFarBlock(diff: string, reviewed: boolean): string {
  const what = reviewed ? 'the work under review' : "your previous attempt's work, which the gate's test command failed on";
  const text = diff.trim() === '' ? '(it changed no file)' : ['```diff', clipMiddle(diff.trimEnd(), WORK_SO_FAR_MAX), '```'].join('\n');
  return [
    '## The work so far',
    '',
    `Your workspace already holds ${what}: edit those files rather than starting over. Its diff against the commit your attempt starts from:`,
    '',
    text,
  ].join('\n');
}

function retryBlock(plan: Plan, index: number, attempt: number, maxAttempts: number, fromEarlierWork: boolean): string {
  const task = taskAt(plan.tasks, index);
  const lines = [
    '## Retry',
    '',
    `This is attempt ${attempt} of ${maxAttempts}. The previous attempt did not pass:`,
    '',
    task.result ?? '(no reason was recorded)',
    '',
    ...(task.retryAdvice !== undefined ? [task.retryAdvice, ''] : []),
    fromEarlierWork
      ? 'The files of the previous attempt were restored to the work so far (below), so start again from there.'
      : 'The files of the previous attempt were restored, so start again from the repository as it is now.',
    '',
    `You may change only these files (a path ending in "/" covers everything under it): ${fileList(plan, index)}. Every other write is denied.`,
  ];
  if (task.agent?.fallback) {
    lines.push('', `IMPORTANT: the primary approach failed; use this strategy instead: ${task.agent.fallback}`);
  }
  const checks = task.agent?.acceptanceCriteria ?? [];
  if (checks.length > 0) {
    lines.push('', 'These acceptance checks must pass before you report COMPLETED:');
    for (const c of checks) lines.push(`- ${c.criterion}: \`${c.check}\``);
  }
  return lines.join('\n');
}

/** The files a task may change, as the worker is told: every path, or "(none)". */
function fileList(plan: Plan, index: number): string {
  const all = writesOf(taskAt(plan.tasks, index));
  return all.length > 0 ? all.join(', ') : '(none)';
}

function rules(plan: Plan, index: number): string {
  const files = taskAt(plan.tasks, index).metadata.files;
  const list = (xs: string[]) => (xs.length > 0 ? xs.join(', ') : '(none)');
  const mayChange = files.mayChange ?? [];
  return [
    '## Rules for this run',
    '',
    `- You are one of several workers changing this repository at the same time. Change only your task's files: create ${list(files.create)}; modify ${list(files.modify)}.${mayChange.length > 0 ? ` These may change too, when a tool you run rewrites them (an install, a test run, a build): ${list(mayChange)}.` : ''} Writes to any other path are denied, and a change to one is set aside and never kept.`,
    '- If the task cannot be done without changing a file it does not list, do not change that file: end with `BLOCKED: needs to change <path>, which the task does not declare`.',
    '- Do not stage, commit, stash, reset or check out anything with git: the orchestrator verifies your work and commits it.',
    '- End your reply with exactly one final status line, as plain text (no bold, no backticks), and nothing after it: the word COMPLETED, FAILED or BLOCKED, a colon, and on the same line what you did, what went wrong, or what is missing that you cannot provide. For example, a reply may end with the line COMPLETED: added the CSV exporter and its test',
  ].join('\n');
}

/**
 * The worker's report: the LAST line of its final text reading `COMPLETED: …`, `FAILED: …` or
 * `BLOCKED: …`, as models write it: trimmed, after `>` quote markers and a list marker (`-`, `*`,
 * `1.`), and inside markdown emphasis or code (`**COMPLETED:** …`, `**COMPLETED**: …`,
 * `` `COMPLETED: …` ``). Null when there is none.
 */
export function parseStatusLine(text: string): StatusLine | null {
  const lines = text.split(/\r?\n/);
  for (let i = lines.length - 1; i >= 0; i--) {
    const found = statusOfLine(lines[i] ?? '');
    if (found !== null) return found;
  }
  return null;
}

function statusOfLine(raw: string): StatusLine | null {
  const bare = raw
    .trim()
    .replace(/^(?:>\s*)+/, '')
    .replace(/^(?:[-*+]|\d+[.)])\s+/, '');
  const opening = /^[*_`~]*/.exec(bare)![0];
  if (opening === '') {
    const m = STATUS_LINE.exec(bare);
    return m === null ? null : { status: m[1] as ReportedStatus, text: (m[2] ?? '').trim() };
  }
  // Markup opened before the word closes right after it, right after its colon, or at the end.
  const rest = bare.slice(opening.length);
  const word = STATUS_WORD.exec(rest);
  if (word === null) return null;
  const closing = [...opening].reverse().join('');
  const after = rest.slice(word[0].length);
  let text: string;
  if (after.startsWith(`${closing}:`)) text = after.slice(closing.length + 1);
  else if (after.startsWith(`:${closing}`)) text = after.slice(closing.length + 1);
  else if (after.startsWith(':')) {
    const body = after.slice(1).trimEnd();
    text = body.endsWith(closing) ? body.slice(0, body.length - closing.length) : body;
  } else return null;
  if (text !== '' && !/^\s/.test(text)) return null;
  return { status: word[1] as ReportedStatus, text: text.trim() };
}
