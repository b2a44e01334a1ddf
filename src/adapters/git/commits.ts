// Commit objects written by foreman's own code over one git process kept running,
// `hash-object -w -t commit --stdin-paths`: an integration used to start a `commit-tree` for
// each commit (with its shell, most of what a batch of tasks cost in git processes). The object
// is the one `commit-tree` writes: the tree, the parent, the author and committer as git itself
// names them (`git var`, asked once, with foreman's fallback name and email where none is
// configured) at the time of the commit, a blank line, the message as given. git checks its
// format before writing it (`hash-object` without `--literally`).
//
// Where git would write more than that (an `i18n.commitEncoding` other than UTF-8 adds an
// `encoding` header), the caller falls back to `commit-tree`.

import { randomBytes } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { err, isObjectId, ok, type Result } from '../../core/index.ts';
import { git, GitCommandError, GitSession, identityArgs, lineAnswerLength } from './runner.ts';

/** A person as a commit names them, `Name <email>`, and the date git was told to use, if any. */
interface Signature {
  person: string;
  /** `<seconds> <±hhmm>` from GIT_AUTHOR_DATE / GIT_COMMITTER_DATE; null: the time of the commit. */
  fixedDate: string | null;
}

interface Identity {
  author: Signature;
  committer: Signature;
}

/** `<seconds> <±hhmm>` for `ms`, in this process's time zone, as git writes a date. */
export function gitDate(ms: number): string {
  const offset = -new Date(ms).getTimezoneOffset();
  const magnitude = Math.abs(offset);
  const zone = `${offset < 0 ? '-' : '+'}${String(Math.floor(magnitude / 60)).padStart(2, '0')}${String(magnitude % 60).padStart(2, '0')}`;
  return `${Math.floor(ms / 1000)} ${zone}`;
}

/** `Name <email> 1700000000 +0100` as `git var` prints it: the person, and the date when the environment fixed it. */
function signatureOf(ident: string, dateVariable: string | undefined): Signature | null {
  const match = /^(.*>) (\d+ [+-]\d{4})$/.exec(ident);
  if (match === null) return null;
  return { person: match[1]!, fixedDate: dateVariable ? match[2]! : null };
}

/** The identity `commit-tree` would use in `repo`; null when git would write an encoding header (or `git var` says something unexpected). */
async function identityIn(repo: string): Promise<Result<Identity | null, GitCommandError>> {
  const listed = await git(repo, [...(await identityArgs(repo)), 'var', '-l']);
  if (!listed.ok) return listed;
  // `var -l` lists the configuration too: only what a commit needs is kept (the last value wins, as in git).
  const wanted = new Set(['i18n.commitencoding', 'git_author_ident', 'git_committer_ident']);
  const values = new Map<string, string>();
  for (const line of listed.value.split('\n')) {
    const equals = line.indexOf('=');
    const name = line.slice(0, Math.max(equals, 0)).toLowerCase();
    if (wanted.has(name)) values.set(name, line.slice(equals + 1));
  }
  const encoding = values.get('i18n.commitencoding');
  if (encoding !== undefined && !/^utf-?8$/i.test(encoding)) return ok(null);
  const author = signatureOf(values.get('git_author_ident') ?? '', process.env.GIT_AUTHOR_DATE);
  const committer = signatureOf(values.get('git_committer_ident') ?? '', process.env.GIT_COMMITTER_DATE);
  return ok(author && committer ? { author, committer } : null);
}

/** Writes commit objects in one repository; `close` ends its git process (it also ends with this process). */
export class CommitWriter {
  private readonly writer: GitSession;
  private identity: Promise<Result<Identity | null, GitCommandError>> | null = null;

  constructor(readonly repo: string) {
    this.writer = new GitSession(repo, ['hash-object', '-w', '-t', 'commit', '--no-filters', '--stdin-paths']);
  }

  close(): void {
    this.writer.close();
  }

  /**
   * The commit of `tree` on `parent` with `message`; null when `commit-tree` must write it. Unlike
   * `commit-tree`, git does not look the tree and the parent up: the caller passes objects it has.
   */
  async write(tree: string, parent: string, message: string): Promise<Result<string, GitCommandError> | null> {
    this.identity ??= identityIn(this.repo);
    const identity = await this.identity;
    if (!identity.ok) {
      this.identity = null;
      return identity;
    }
    if (identity.value === null) return null;
    const now = gitDate(Date.now());
    const { author, committer } = identity.value;
    const object = `tree ${tree}\nparent ${parent}\nauthor ${author.person} ${author.fixedDate ?? now}\ncommitter ${committer.person} ${committer.fixedDate ?? now}\n\n${message}`;
    // A file for each object (`--stdin-paths` is what keeps one process for many objects), made
    // new (never through a name someone left there) and removed once git has read it.
    const file = join(tmpdir(), `foreman-commit-${process.pid}-${randomBytes(8).toString('hex')}`);
    if (file.includes('\n')) return null;
    try {
      writeFileSync(file, object, { flag: 'wx', mode: 0o600 });
    } catch {
      // No room in the temporary directory: `commit-tree` needs none.
      return null;
    }
    try {
      const answer = await this.writer.ask(Buffer.from(`${file}\n`), lineAnswerLength);
      if (!answer.ok) return answer;
      const printed = answer.value.toString('utf8').trim();
      return isObjectId(printed)
        ? ok(printed)
        : err(new GitCommandError(['hash-object'], -1, `hash-object printed no object id: ${answer.value.toString('utf8').slice(0, 200)}`));
    } finally {
      rmSync(file, { force: true });
    }
  }
}
