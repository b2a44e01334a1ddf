// The plan lint: hazards a valid plan can still hold, each costing paid worker attempts later if
// left in it. Found by following dependencies transitively; each is one line naming the tasks as
// `tasks[N]`, the file and the exact fix:
//   `tasks[1] modifies src/a.ts, which tasks[0] creates, but does not depend on it: add 0 to tasks[1].blockedBy`
// Besides the hazards between tasks and files: an acceptance check needing a file nothing makes
// (core/plan/lint/check-paths.ts), a field the schema does not define (core/plan/plan-fields.ts; a near miss of
// a defined one never gets here, validation refuses it) and a model the Claude Code CLI would not
// know. Warnings, not problems: the plan still runs. A warning the plan's author accepts is recorded in
// the plan (`acceptedWarnings`: the warning's line and the reason) and no longer reported; an
// acceptance that matches no warning is reported itself, never dropped (its reason is the
// author's words). Pure: the caller passes the files of the repository's last commit, or null
// outside a repository (then only the hazards between the plan's own tasks are looked for).
// Paths are indexed, never compared pair by pair across the plan: a 20,000-task plan is linted
// in a fraction of its validation's time (lint-paths.ts). The hazards against the last commit are
// lint-repository.ts's; what a hazard holds before it is worded, lint-hazards.ts's.

import { ancestry, type Ancestry, depsOf } from '../graph.ts';
import { assertNever } from '../../result.ts';
import { clipHead } from '../../format.ts';
import { isDirPath } from '../paths.ts';
import { DEFAULT_MODEL, isKnownModel, MODEL_ALIASES, type Plan, type Task, taskAt } from '../plan.ts';
import { fieldPath, nearMisses, OWN_FIELD_PREFIX, unknownFields } from '../plan-fields.ts';
import { type Hazard, isDone, type Use } from './lint-hazards.ts';
import { indexUses, keyOf, type PathIndex, usesCovering } from './lint-paths.ts';
import { existence, missingCheckFiles, undeclaredFiles } from './lint-repository.ts';

export const PLAN_WARNING_KINDS = [
  'unordered-create',
  'create-after-modify',
  'duplicate-create',
  'missing-file',
  'undeclared-prompt-path',
  'unordered-read',
  'lockfile',
  'missing-check-file',
  'unknown-field',
  'unknown-model',
  'stale-acceptance',
] as const;
export type PlanWarningKind = (typeof PLAN_WARNING_KINDS)[number];
/** A task's warnings are listed in this order. */
const KIND_ORDER = Object.fromEntries(PLAN_WARNING_KINDS.map((kind, i) => [kind, i])) as Record<PlanWarningKind, number>;

export interface PlanWarning {
  kind: PlanWarningKind;
  /** The task the fix is for: the line starts with it (null for an acceptance matching nothing, or a field outside the tasks). */
  task: number | null;
  /** The other tasks the line names. */
  others: number[];
  /** The file the line is about (null for an acceptance matching nothing, a field or a model). */
  path: string | null;
  /** The line: the hazard and its fix. */
  message: string;
}

export interface PlanLint {
  /** What is left to fix or accept, by task; acceptances that match no warning last. */
  warnings: PlanWarning[];
  /** The warnings the plan accepts, each with its reason. */
  accepted: Array<{ warning: PlanWarning; reason: string }>;
}

/**
 * The plan's warnings. Requires a valid plan (validatePlan: indices in range, no cycle).
 * `tracked`: the files of the repository's last commit, the state every worker starts from.
 */
export function lintPlan(plan: Plan, tracked: ReadonlySet<string> | null): PlanLint {
  const tasks = plan.tasks;
  const hazards: Hazard[] = [];
  const creators = indexUses(tasks, (task) => task.metadata.files.create);
  const writers = indexUses(tasks, (task) => [...task.metadata.files.create, ...task.metadata.files.modify]);
  // Ordering is asked only about tasks in a pair that needs it.
  const members = new Set<number>();
  const pair = (a: number, b: number) => {
    members.add(a);
    members.add(b);
  };

  const modifies: Array<{ task: number; path: string; creators: readonly Use[] }> = [];
  tasks.forEach((task, t) => {
    if (isDone(task)) return;
    for (const path of task.metadata.files.modify) {
      const covering = usesCovering(creators, path);
      for (const c of covering) if (c.task !== t && !isDone(taskAt(tasks, c.task))) pair(t, c.task);
      modifies.push({ task: t, path, creators: covering });
    }
  });

  const duplicates: Array<{ owners: number[]; uses: readonly Use[] }> = [];
  for (const uses of creators.byKey.values()) {
    if (uses.length < 2) continue;
    const owners = [...new Set(uses.map((use) => use.task))];
    if (owners.length < 2 || owners.every((i) => isDone(taskAt(tasks, i)))) continue;
    for (const i of owners) members.add(i);
    duplicates.push({ owners, uses });
  }

  const reads = readsOfWritten(tasks, writers);
  for (const read of reads) for (const writer of read.writers.keys()) pair(read.task, writer);

  const order = members.size > 0 ? ancestry(depsOf(tasks), members) : null;
  const ordered = (a: number, b: number) => order!.dependsOn(a, b) || order!.dependsOn(b, a);

  const exists = existence(tasks, tracked);
  for (const m of modifies) {
    if (m.creators.length === 0) {
      if (exists !== null && !exists(m.path)) hazards.push({ kind: 'missing-file', task: m.task, path: m.path });
      continue;
    }
    const live = uniqueTasks(m.creators.filter((c) => c.task !== m.task && !isDone(taskAt(tasks, c.task))));
    const unordered = live.filter((c) => !ordered(m.task, c.task));
    const after = live.filter((c) => order!.dependsOn(c.task, m.task));
    if (unordered.length > 0) hazards.push({ kind: 'unordered-create', task: m.task, path: m.path, creators: unordered });
    if (after.length > 0) hazards.push({ kind: 'create-after-modify', task: m.task, path: m.path, creators: after });
  }

  for (const { owners, uses } of duplicates) hazards.push(...duplicateHazards(tasks, owners, uses, order!));

  for (const read of reads) {
    const unordered = [...read.writers.values()].filter((writer) => !ordered(read.task, writer.task));
    if (unordered.length > 0) hazards.push({ kind: 'unordered-read', task: read.task, path: read.path, writers: unordered.sort((a, b) => a.task - b.task) });
  }

  if (tracked !== null) hazards.push(...undeclaredFiles(tasks, tracked), ...missingCheckFiles(tasks, tracked));
  hazards.push(...unknownFieldsOf(plan), ...unknownModels(tasks));
  return withAcceptances(plan, hazards.map(warningOf));
}

/** The fields the schema does not define (a near miss of one never gets here: validation refuses it). */
function unknownFieldsOf(plan: Plan): Hazard[] {
  return unknownFields(plan).map(({ task, parent, key }) => ({ kind: 'unknown-field', task, parent, key }));
}

/** Pending tasks' models the Claude Code CLI would not know (a completed task's will not run again). */
function unknownModels(tasks: readonly Task[]): Hazard[] {
  return tasks.flatMap((task, t): Hazard[] => {
    const model = task.agent?.model;
    if (isDone(task) || model === undefined || isKnownModel(model)) return [];
    return [{ kind: 'unknown-model', task: t, model, meant: nearMisses(model.trim().toLowerCase(), MODEL_ALIASES) }];
  });
}

/** A pending task's read of a path, and the other pending tasks writing what it covers or what covers it. */
interface ReadOfWritten {
  task: number;
  path: string;
  writers: Map<number, Use>;
}

/**
 * Every read of a pending task with the other pending tasks writing the same path, a path under a
 * directory read, or a directory holding the path read. Found through the index, from both sides.
 */
function readsOfWritten(tasks: readonly Task[], writers: PathIndex): ReadOfWritten[] {
  const reads: ReadOfWritten[] = [];
  const add = (read: ReadOfWritten, writer: Use) => {
    if (writer.task !== read.task && !read.writers.has(writer.task) && !isDone(taskAt(tasks, writer.task))) read.writers.set(writer.task, writer);
  };
  const directoryReads = new Map<string, ReadOfWritten[]>();
  tasks.forEach((task, t) => {
    if (isDone(task)) return;
    for (const path of new Set(task.metadata.reads ?? [])) {
      const read: ReadOfWritten = { task: t, path, writers: new Map() };
      reads.push(read);
      for (const writer of usesCovering(writers, path)) add(read, writer);
      if (!isDirPath(path)) continue;
      const list = directoryReads.get(keyOf(path));
      if (list) list.push(read);
      else directoryReads.set(keyOf(path), [read]);
    }
  });
  // A directory read holding a written path: walk up from each written path.
  if (directoryReads.size > 0) {
    for (const [key, uses] of writers.byKey) {
      for (let cut = key.indexOf('/'); cut > 0; cut = key.indexOf('/', cut + 1)) {
        for (const read of directoryReads.get(key.slice(0, cut)) ?? []) for (const writer of uses) add(read, writer);
      }
    }
  }
  return reads.filter((read) => read.writers.size > 0);
}

/** One creator per task (a task may create a file and a directory holding it), by task. */
function uniqueTasks(uses: readonly Use[]): Use[] {
  const byTask = new Map<number, Use>();
  for (const use of uses) if (!byTask.has(use.task)) byTask.set(use.task, use);
  return [...byTask.values()].sort((a, b) => a.task - b.task);
}

/**
 * Tasks creating one path: the one that comes first (a completed one, else the first by index of
 * those depending on no other) keeps it; every other is told to modify it instead.
 */
function duplicateHazards(tasks: readonly Task[], owners: readonly number[], uses: readonly Use[], order: Ancestry): Hazard[] {
  const sorted = [...owners].sort((a, b) => a - b);
  const first = sorted.find((i) => isDone(taskAt(tasks, i))) ?? sorted.find((i) => sorted.every((j) => j === i || !order.dependsOn(i, j)))!;
  const firstDone = isDone(taskAt(tasks, first));
  return sorted.flatMap((task): Hazard[] => {
    if (task === first || isDone(taskAt(tasks, task))) return [];
    const path = uses.find((use) => use.task === task)!.path;
    return [{ kind: 'duplicate-create', task, path, first, firstDone, unordered: !firstDone && !order.dependsOn(task, first) }];
  });
}

const at = (task: number): string => `tasks[${task}]`;

/** `a`, `a and b`, `a, b and c`. */
function listed(items: readonly string[]): string {
  return items.length <= 1 ? items.join('') : `${items.slice(0, -1).join(', ')} and ${items[items.length - 1]}`;
}

/** `tasks[0]`, or `tasks[0] (src/new/)` when the task's path is not the one the line is about. */
const naming = (uses: readonly Use[], path: string): string => listed(uses.map((use) => (use.path === path ? at(use.task) : `${at(use.task)} (${use.path})`)));

/** `tasks[0] creates`, `tasks[0] and tasks[2] create`. */
const creating = (creators: readonly Use[], path: string): string => `${naming(creators, path)} ${creators.length === 1 ? 'creates' : 'create'}`;

function warningOf(hazard: Hazard): PlanWarning {
  const line = (task: number, path: string, others: number[], message: string): PlanWarning => ({ kind: hazard.kind, task, others, path, message });
  switch (hazard.kind) {
    case 'unordered-create': {
      const { task, path, creators } = hazard;
      const ids = creators.map((c) => c.task);
      return line(
        task,
        path,
        ids,
        `${at(task)} modifies ${path}, which ${creating(creators, path)}, but does not depend on ${ids.length === 1 ? 'it' : 'them'}: add ${listed(ids.map(String))} to ${at(task)}.blockedBy`,
      );
    }
    case 'create-after-modify': {
      const { task, path, creators } = hazard;
      const ids = creators.map((c) => c.task);
      const after = ids.length === 1 ? 'it depends on TASK and runs' : 'they depend on TASK and run';
      return line(
        task,
        path,
        ids,
        `${at(task)} modifies ${path}, which ${creating(creators, path)}, but ${after.replace('TASK', at(task))} after it: move ${path} from modify to create in ${at(task)}, and from create to modify in ${listed(ids.map(at))}`,
      );
    }
    case 'duplicate-create': {
      const { task, path, first } = hazard;
      const before = hazard.firstDone ? 'created already' : hazard.unordered ? 'creates too, and neither depends on the other' : 'creates before it';
      return line(
        task,
        path,
        [first],
        `${at(task)} creates ${path}, which ${at(first)} ${before}: move ${path} from create to modify in ${at(task)}${hazard.unordered ? ` and add ${first} to ${at(task)}.blockedBy` : ''}`,
      );
    }
    case 'missing-file':
      return line(
        hazard.task,
        hazard.path,
        [],
        `${at(hazard.task)} modifies ${hazard.path}, which the repository's last commit does not have and no task creates: correct the path, or move it from modify to create in ${at(hazard.task)}`,
      );
    case 'undeclared-prompt-path': {
      const { task, path } = hazard;
      return line(
        task,
        path,
        [],
        `${at(task)}.prompt names ${path}, which the task does not declare: add it to ${at(task)}.metadata.files.modify, or to ${at(task)}.metadata.reads if the task only reads it`,
      );
    }
    case 'unordered-read': {
      const { task, path, writers } = hazard;
      const ids = writers.map((w) => w.task);
      const one = ids.length === 1;
      const changing = `${naming(writers, path)} ${one ? 'changes' : 'change'}, but ${one ? 'neither depends on the other' : `no dependency orders ${at(task)} with them`}`;
      const before = one ? `${task} to ${at(ids[0]!)}.blockedBy` : `${task} to the blockedBy of ${listed(ids.map(at))}`;
      return line(
        task,
        path,
        ids,
        `${at(task)} reads ${path}, which ${changing}: add ${listed(ids.map(String))} to ${at(task)}.blockedBy to read it after the ${one ? 'change' : 'changes'}, or ${before} to read it before`,
      );
    }
    case 'lockfile': {
      const { task, path } = hazard;
      const names = listed(hazard.lockfiles);
      return line(
        task,
        path,
        [],
        `${at(task)} modifies ${path} but does not declare ${names}, which installing its dependencies may rewrite: add ${names} to ${at(task)}.metadata.files.mayChange`,
      );
    }
    case 'missing-check-file': {
      const { task, criterion, path } = hazard;
      return line(
        task,
        path,
        [],
        `${at(task)}.agent.acceptanceCriteria[${criterion}].check needs ${path}, which the repository's last commit does not have and no task creates, so the check fails whatever the worker does: correct the check, or add ${path} to ${at(task)}.metadata.files.create`,
      );
    }
    case 'unknown-field': {
      const { task, parent, key } = hazard;
      return {
        kind: hazard.kind,
        task,
        others: [],
        path: null,
        message: `${fieldPath(parent, key)}: unknown field, kept but not read by foreman: remove it, or rename it ${JSON.stringify(`${OWN_FIELD_PREFIX}${key}`)} to keep it as your own data`,
      };
    }
    case 'unknown-model': {
      const { task, model, meant } = hazard;
      const fix =
        meant.length > 0 ? `write ${meant.map((m) => JSON.stringify(m)).join(' or ')}` : `correct it, or remove it to use ${JSON.stringify(DEFAULT_MODEL)}`;
      return {
        kind: hazard.kind,
        task,
        others: [],
        path: null,
        message: `${at(task)}.agent.model ${JSON.stringify(model)} is neither an alias the Claude Code CLI accepts (${MODEL_ALIASES.join(', ')}) nor a Claude model name (claude-…): ${fix}`,
      };
    }
    case 'stale-acceptance':
      return {
        kind: hazard.kind,
        task: null,
        others: [],
        path: null,
        message: `acceptedWarnings[${hazard.index}] accepts a warning the plan no longer has ("${clipHead(hazard.warning, 120)}"): remove it from acceptedWarnings`,
      };
    default:
      return assertNever(hazard, 'plan hazard');
  }
}

/** The plan's acceptances applied: accepted warnings set apart, acceptances matching none reported. */
function withAcceptances(plan: Plan, found: PlanWarning[]): PlanLint {
  // A field outside the tasks comes first.
  found.sort(
    (a, b) => (a.task ?? -1) - (b.task ?? -1) || KIND_ORDER[a.kind] - KIND_ORDER[b.kind] || (a.message < b.message ? -1 : a.message > b.message ? 1 : 0),
  );
  const acceptances = plan.acceptedWarnings ?? [];
  const reasons = new Map<string, string>();
  for (const acceptance of acceptances) if (!reasons.has(acceptance.warning.trim())) reasons.set(acceptance.warning.trim(), acceptance.reason);
  const warnings: PlanWarning[] = [];
  const accepted: PlanLint['accepted'] = [];
  const matched = new Set<string>();
  for (const warning of found) {
    const reason = reasons.get(warning.message);
    if (reason === undefined) {
      warnings.push(warning);
    } else {
      accepted.push({ warning, reason });
      matched.add(warning.message);
    }
  }
  acceptances.forEach((acceptance, index) => {
    if (!matched.has(acceptance.warning.trim())) warnings.push(warningOf({ kind: 'stale-acceptance', index, warning: acceptance.warning.trim() }));
  });
  return { warnings, accepted };
}

/** Where warnings are listed, how one is accepted instead of fixed. */
export const HOW_TO_ACCEPT = 'to accept a warning instead of fixing it, add {"warning": "<its line>", "reason": "<why>"} to the plan\'s "acceptedWarnings"';

/** How many warnings a run's start says before it points at `plan check` for the rest. */
export const NOTICED_WARNINGS = 20;

/**
 * The warnings as a run's start says them, once (a headless run's notices, `plan setup`'s JSON):
 * at most `limit`, then how many more and the command that lists them all.
 */
export function warningNotices(warnings: readonly PlanWarning[], checkCommand: string, limit = NOTICED_WARNINGS): string[] {
  const shown = warnings.slice(0, limit).map((warning) => `plan warning: ${warning.message}`);
  const more = warnings.length - shown.length;
  return more > 0 ? [...shown, `plan warning: ${more} more; \`${checkCommand}\` lists them all`] : shown;
}
