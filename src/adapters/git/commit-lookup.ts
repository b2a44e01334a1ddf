// The full id of the commit a slot of the pool is reset to, found before any slot is touched (a
// failed reset would remake the slot) and asked of git once per commit: attempts started together
// share the integration tip.

import { err, failureOf, isObjectId, ok, type Result } from '../../core/index.ts';
import type { ProvisionFailure } from './provisioning.ts';
import { commitOf } from './refs.ts';

/** Commits of one repository already found to exist (a commit stays), and the lookups under way. */
export class CommitLookup {
  private readonly knownCommits = new Set<string>();
  private readonly lookups = new Map<string, Promise<Result<string, ProvisionFailure>>>();

  /** `repo`: the person's repository top; `knows`: whether the caller made a commit itself (an integration), so it exists. */
  constructor(
    private readonly repo: string,
    private readonly knows: (commit: string) => boolean = () => false,
  ) {}

  /** The full hash of `target`, checked to be a commit. Calls at once for the same full id share one lookup. */
  resolve(target: string): Promise<Result<string, ProvisionFailure>> {
    if (this.knownCommits.has(target) || (isObjectId(target) && this.knows(target))) return Promise.resolve(ok(target));
    if (!isObjectId(target)) return this.lookUp(target);
    let pending = this.lookups.get(target);
    if (pending === undefined) {
      pending = this.lookUp(target).finally(() => this.lookups.delete(target));
      this.lookups.set(target, pending);
    }
    return pending;
  }

  private async lookUp(target: string): Promise<Result<string, ProvisionFailure>> {
    const found = await commitOf(this.repo, target);
    if (!found.ok) return err({ kind: 'git-failed', doing: `find the commit ${target}`, failure: failureOf(found.error) });
    const commit = found.value;
    // Only a full id is remembered as itself: a name (HEAD, a branch) may move.
    if (commit === target) this.knownCommits.add(commit);
    return ok(commit);
  }
}
