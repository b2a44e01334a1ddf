// The plan file: reading its text, writing it atomically (atomic-file.ts), and keeping a person's
// edit made while a run holds it (`PlanKeeper`).

import { createHash } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { commandHint, compactTimestamp, err, type Layout, ok, type Plan, type Result } from '../../core/index.ts';
import { createExclusive, writeFileAtomic } from './atomic-file.ts';

export type PlanReadError = { kind: 'missing' | 'unreadable'; message: string };

/** The plan file's text (UTF-8). Parsing and validation are the caller's. */
export async function readPlanFile(file: string): Promise<Result<{ text: string }, PlanReadError>> {
  let bytes: Buffer;
  try {
    bytes = await readFile(file);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    const message = `${file}: ${(e as Error).message}`;
    return err({ kind: code === 'ENOENT' || code === 'ENOTDIR' ? 'missing' : 'unreadable', message });
  }
  try {
    return ok({ text: new TextDecoder('utf-8', { fatal: true }).decode(bytes) });
  } catch {
    return err({ kind: 'unreadable', message: `${file}: not valid UTF-8 text` });
  }
}

/** The plan as JSON with a 2-space indent and a trailing newline. */
export const serializePlan = (plan: Plan): string => `${JSON.stringify(plan, null, 2)}\n`;

/** Writes the plan atomically, keeping the file's mode. */
export async function writePlanAtomic(file: string, plan: Plan): Promise<void> {
  await writeFileAtomic(file, serializePlan(plan));
}

const digestOf = (bytes: string | Uint8Array): string => createHash('sha256').update(bytes).digest('hex');

/** Where a person's edit to `planPath`, made while a run held it, is kept: `plan.edited-<stamp>.json` beside it. */
const editedPathFor = (planPath: string, stamp: string, n: number): string =>
  path.join(path.dirname(planPath), `${path.basename(planPath, '.json')}.edited-${stamp}${n === 1 ? '' : `-${n}`}.json`);

/** What the person is told when their edit to the plan file, made while a run held it, was kept aside. */
export const describeKeptEdit = (planPath: string, kept: string, layout: Layout): string =>
  `${planPath} was changed while this run holds it: the run did not take the change in, and kept it, byte for byte, in ${kept}. To use it, stop the run (\`${commandHint('plan', 'drain', layout)}\` lets it finish what is running; Ctrl-C stops it now), copy ${kept} over ${planPath}, and run again: the resumed run finds the work already integrated on its ref`;

/**
 * The plan file as a run holding its lock keeps it. The run writes the plan after every change;
 * a person may edit the file meanwhile (by hand, or with `plan check --fix`, which takes no lock),
 * and the run's next write would replace that edit unseen. So before each write the file is
 * compared with what the run last read or wrote: when it differs, the person's bytes are kept
 * whole at a path of their own beside the plan (never merged into the run, never lost), and the
 * write says where. A stat that matches the run's own last write skips the comparison.
 */
export class PlanKeeper {
  private digest: string;
  private written: { size: number; mtimeMs: number; ino: number } | null = null;

  /** `text`: the plan file's content as the run read it. */
  constructor(
    readonly path: string,
    text: string,
  ) {
    this.digest = digestOf(text);
  }

  /** Write `plan`; the path where a person's edit found in the file was kept, or null when there was none. */
  async save(plan: Plan, now: Date = new Date()): Promise<string | null> {
    const kept = await this.keepEdit(now);
    const text = serializePlan(plan);
    await writeFileAtomic(this.path, text);
    this.digest = digestOf(text);
    const st = await stat(this.path).catch(() => null);
    this.written = st === null ? null : { size: st.size, mtimeMs: st.mtimeMs, ino: st.ino };
    return kept;
  }

  private async keepEdit(now: Date): Promise<string | null> {
    const st = await stat(this.path).catch(() => null);
    if (st === null) return null;
    const w = this.written;
    if (w !== null && st.size === w.size && st.mtimeMs === w.mtimeMs && st.ino === w.ino) return null;
    const bytes = await readFile(this.path).catch(() => null);
    if (bytes === null || digestOf(bytes) === this.digest) return null;
    const stamp = compactTimestamp(now);
    for (let n = 1; ; n++) {
      const target = editedPathFor(this.path, stamp, n);
      // A person's file beside their plan, read by no process: made as any file of theirs, in place.
      if (await createExclusive(target, bytes, { mode: 0o666, whole: false })) return target;
    }
  }
}
