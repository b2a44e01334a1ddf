// Trees built in foreman's own code over two git processes kept running: `cat-file --batch`
// reads a commit's tree and the trees along each changed path (cached by id, since a tree never
// changes), `mktree -z --batch` writes the changed trees, deepest first. The tree is the one
// `read-tree` + `update-index -z --index-info` (deletions first) + `write-tree` would make in an
// index file: deleting a path that is a directory or absent changes nothing, a file replaces the
// directory at its path and a directory the file, and a directory left empty goes. Without an
// index file, which a large repository's integrations rewrote whole each time (tens of
// megabytes), and with two processes per run instead of two or three per integration.
//
// Names are handled as the bytes git stores (latin1 strings inside, one character a byte), so an
// entry nobody changed is written back exactly as it was read.

import { err, isObjectId, ok, type Result, type WorkEntry } from '../../core/index.ts';
import { git, GitCommandError, GitSession, lineAnswerLength } from './runner.ts';

interface TreeEntry {
  mode: string;
  id: string;
}

/** A tree's entries by name (latin1). */
type Entries = Map<string, TreeEntry>;

const isTreeMode = (mode: string): boolean => mode === '40000' || mode === '040000';
const TREE_MODE = '40000';

/** The type `mktree` expects for an entry's mode. */
const typeOf = (mode: string): 'tree' | 'commit' | 'blob' => (isTreeMode(mode) ? 'tree' : mode === '160000' ? 'commit' : 'blob');

/** How many trees are kept read; past it the cache starts again (trees are re-read on demand). */
const CACHED_TREES = 20_000;

/** Where a `cat-file --batch` answer ends in `buffered`, or -1 while it is incomplete. */
function catFileAnswerLength(buffered: Buffer): number {
  const newline = buffered.indexOf(0x0a);
  if (newline < 0) return -1;
  const header = buffered.toString('latin1', 0, newline);
  if (/ (missing|ambiguous)$/.test(header)) return newline + 1;
  const size = Number(header.split(' ')[2]);
  if (!Number.isSafeInteger(size)) return newline + 1;
  const end = newline + 1 + size + 1;
  return buffered.length >= end ? end : -1;
}

/** A tree object's entries (mode SP name NUL raw id), ids as hex of `idBytes` bytes; null when it does not parse. */
function parseTree(body: Buffer, idBytes: number): Entries | null {
  const entries: Entries = new Map();
  let at = 0;
  while (at < body.length) {
    const space = body.indexOf(0x20, at);
    const nul = space < 0 ? -1 : body.indexOf(0, space);
    if (nul < 0 || nul + 1 + idBytes > body.length) return null;
    entries.set(body.toString('latin1', space + 1, nul), { mode: body.toString('latin1', at, space), id: body.toString('hex', nul + 1, nul + 1 + idBytes) });
    at = nul + 1 + idBytes;
  }
  return entries;
}

const parentOf = (dir: string): string => (dir.includes('/') ? dir.slice(0, dir.lastIndexOf('/')) : '');
const nameOf = (dir: string): string => dir.slice(dir.lastIndexOf('/') + 1);
const depthOf = (dir: string): number => (dir === '' ? 0 : dir.split('/').length);

const failure = (args: readonly string[], said: string): GitCommandError => new GitCommandError(args, -1, said);

export class TreeBuilder {
  private readonly reader: GitSession;
  private readonly writer: GitSession;
  private readonly trees = new Map<string, ReadonlyMap<string, TreeEntry>>();
  private readonly commitTrees = new Map<string, string>();

  constructor(private readonly repo: string) {
    this.reader = new GitSession(repo, ['cat-file', '--batch']);
    this.writer = new GitSession(repo, ['mktree', '-z', '--batch']);
  }

  /** Ends both processes; a later call starts them again. */
  close(): void {
    this.reader.close();
    this.writer.close();
  }

  /** That `commit`'s tree is `tree` (a commit the caller made): no need to read it. */
  rememberCommit(commit: string, tree: string): void {
    this.commitTrees.set(commit, tree);
  }

  /** Whether this builder made or read commit `commit`: it exists (a commit stays). */
  knowsCommit(commit: string): boolean {
    return this.commitTrees.has(commit);
  }

  /** The tree of commit `start` with `entries` applied, in the order given, deletions first. */
  async treeWith(start: string, entries: readonly WorkEntry[]): Promise<Result<string, GitCommandError>> {
    const root = await this.treeOfCommit(start);
    if (!root.ok) return root;
    const idBytes = start.length / 2;
    const dirs = new Map<string, Entries>();
    const dirty = new Set<string>();

    // The directory at `dir` as a mutable copy: read from its tree when it exists; made empty
    // when `create` (replacing a file at its path); null when it does not exist and may not be made.
    const open = async (dir: string, create: boolean): Promise<Result<Entries | null, GitCommandError>> => {
      const known = dirs.get(dir);
      if (known !== undefined) return ok(known);
      let id: string | null = root.value;
      if (dir !== '') {
        const parent = await open(parentOf(dir), create);
        if (!parent.ok || parent.value === null) return parent;
        const entry = parent.value.get(nameOf(dir));
        id = entry !== undefined && isTreeMode(entry.mode) ? entry.id : null;
        if (id === null && !create) return ok(null);
        if (id === null && entry !== undefined) parent.value.delete(nameOf(dir));
      }
      let copy: Entries = new Map();
      if (id !== null) {
        const read = await this.readTree(id, idBytes);
        if (!read.ok) return read;
        copy = new Map(read.value);
      }
      dirs.set(dir, copy);
      return ok(copy);
    };
    const touch = (dir: string) => {
      for (let at = dir; ; at = parentOf(at)) {
        dirty.add(at);
        if (at === '') break;
      }
    };

    const paths = (entry: WorkEntry) => Buffer.from(entry.path, 'utf8').toString('latin1');
    for (const entry of entries) {
      if (!('deleted' in entry)) continue;
      const path = paths(entry);
      const dir = await open(parentOf(path), false);
      if (!dir.ok) return dir;
      const present = dir.value?.get(nameOf(path));
      // Only a file (or link, or submodule) is deleted: a path that is a directory is no entry.
      if (dir.value && present !== undefined && !isTreeMode(present.mode)) {
        dir.value.delete(nameOf(path));
        touch(parentOf(path));
      }
    }
    for (const entry of entries) {
      if ('deleted' in entry) continue;
      const path = paths(entry);
      const dir = await open(parentOf(path), true);
      if (!dir.ok) return dir;
      // A file over a directory: the directory goes, with whatever was opened under it.
      for (const opened of [...dirs.keys()]) if (opened === path || opened.startsWith(`${path}/`)) dirs.delete(opened);
      for (const marked of [...dirty]) if (marked === path || marked.startsWith(`${path}/`)) dirty.delete(marked);
      dir.value!.set(nameOf(path), { mode: entry.mode, id: entry.object });
      touch(parentOf(path));
    }
    if (!dirty.has('')) return root;

    // Deepest first: each written tree's id goes into its parent before the parent is written.
    for (const dir of [...dirty].sort((a, b) => depthOf(b) - depthOf(a))) {
      const contents = dirs.get(dir)!;
      const parent = dir === '' ? null : dirs.get(parentOf(dir))!;
      if (parent !== null && contents.size === 0) {
        parent.delete(nameOf(dir));
        continue;
      }
      const written = await this.writeTree(contents);
      if (!written.ok) return written;
      if (parent === null) return written;
      parent.set(nameOf(dir), { mode: TREE_MODE, id: written.value });
    }
    return err(failure(['mktree'], 'the root tree was not written'));
  }

  private async treeOfCommit(commit: string): Promise<Result<string, GitCommandError>> {
    const known = this.commitTrees.get(commit);
    if (known !== undefined) return ok(known);
    const read = await this.readObject(commit);
    if (!read.ok) return read;
    // A commit object starts with its tree: `tree <id>` on the first line.
    const first = read.value.type === 'commit' ? read.value.body.toString('latin1', 0, read.value.body.indexOf(0x0a)) : '';
    const tree = first.startsWith('tree ') ? first.slice('tree '.length) : '';
    if (!isObjectId(tree)) return err(failure(['cat-file', '--batch'], `${commit} is not a commit`));
    this.commitTrees.set(commit, tree);
    return ok(tree);
  }

  private async readTree(id: string, idBytes: number): Promise<Result<ReadonlyMap<string, TreeEntry>, GitCommandError>> {
    const known = this.trees.get(id);
    if (known !== undefined) return ok(known);
    const read = await this.readObject(id);
    if (!read.ok) return read;
    if (read.value.type !== 'tree') return err(failure(['cat-file', '--batch'], `${id} is a ${read.value.type}, not a tree`));
    const entries = parseTree(read.value.body, idBytes);
    if (entries === null) return err(failure(['cat-file', '--batch'], `the tree ${id} does not parse`));
    this.cache(id, entries);
    return ok(entries);
  }

  private async readObject(id: string): Promise<Result<{ type: string; body: Buffer }, GitCommandError>> {
    const answer = await this.reader.ask(Buffer.from(`${id}\n`), catFileAnswerLength);
    if (!answer.ok) return answer;
    const newline = answer.value.indexOf(0x0a);
    const header = answer.value.toString('latin1', 0, newline).split(' ');
    if (header.length !== 3) return err(failure(['cat-file', '--batch'], `object ${id}: ${header.slice(1).join(' ') || 'no answer'}`));
    return ok({ type: header[1]!, body: answer.value.subarray(newline + 1, answer.value.length - 1) });
  }

  private async writeTree(entries: Entries): Promise<Result<string, GitCommandError>> {
    const lines = [...entries].map(([name, entry]) =>
      Buffer.concat([Buffer.from(`${entry.mode} ${typeOf(entry.mode)} ${entry.id}\t`), Buffer.from(name, 'latin1'), Buffer.from([0])]),
    );
    const input = Buffer.concat([...lines, Buffer.from([0])]);
    let answer = await this.writer.ask(input, lineAnswerLength);
    if (!answer.ok && (await this.packedSinceStart(answer.error))) answer = await this.writer.ask(input, lineAnswerLength);
    if (!answer.ok) return answer;
    const id = answer.value.toString('latin1').trim();
    if (!isObjectId(id)) return err(failure(['mktree', '-z', '--batch'], id || 'no tree id'));
    this.cache(id, entries);
    return ok(id);
  }

  /**
   * Whether `mktree` died on an entry that the repository does hold: an object packed after the
   * process started (the person's `git gc` moved loose objects into a new pack), which `mktree`,
   * checking entries with git's quick lookup, never looks for. The next request starts a process
   * that lists the packs as they are now. Objects foreman writes are loose, so this is only ever
   * someone else's repack.
   */
  private async packedSinceStart(error: GitCommandError): Promise<boolean> {
    const named = /object ([0-9a-f]{40,64}) is unavailable/.exec(error.stderr);
    if (named === null) return false;
    const present = await git(this.repo, ['cat-file', '-e', named[1]!]);
    return present.ok;
  }

  private cache(id: string, entries: ReadonlyMap<string, TreeEntry>): void {
    if (this.trees.size >= CACHED_TREES) this.trees.clear();
    this.trees.set(id, new Map(entries));
  }
}
