// Git objects between the local repository and a host's run repository, over the host's channel:
// a `git bundle` of a commit (the attempt's base) sent in, a bundle of a commit made there (the
// captured work) fetched back. Only committed history travels, never a working tree; what the
// other side has already (`exclude`) is left out of a bundle.

import { randomBytes } from 'node:crypto';
import { rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { err, NO_HOOKS, ok, oneLine, type Result } from '../../core/index.ts';
import { runGit } from '../git/index.ts';
import { runProcess } from '../processes/index.ts';
import type { HostChannel, RequestError } from './channel.ts';

/** Why objects did not move: the local git failing (a message), or the host's answer. */
export type ObjectsError = { kind: 'local'; message: string } | RequestError;

const local = (message: string): ObjectsError => ({ kind: 'local', message });

/** A bundle of `commit` without what `exclude` reaches, made in `repo` under a ref of its own for the moment (a bundle names its tips by ref). */
async function bundleOf(repo: string, commit: string, exclude: readonly string[]): Promise<Result<Buffer, ObjectsError>> {
  const ref = `refs/foreman/transfer/${randomBytes(6).toString('hex')}`;
  const named = await runGit(['update-ref', ref, commit], { cwd: repo });
  if (!named.ok) return err(local(named.error.message));
  try {
    const ended = await runProcess({
      file: 'git',
      args: [...NO_HOOKS, 'bundle', 'create', '--quiet', '-', ref, ...exclude.map((e) => `^${e}`)],
      cwd: repo,
      env: process.env,
      timeoutMs: 10 * 60_000,
    });
    if (ended.kind !== 'exited') return err(local(`git bundle create ${ended.kind === 'timed-out' ? 'timed out' : `could not start: ${ended.message}`}`));
    if (ended.code !== 0) return err(local(`git bundle create failed: ${oneLine(ended.stderr.toString('utf8'))}`));
    return ok(ended.stdout);
  } finally {
    await runGit(['update-ref', '-d', ref], { cwd: repo });
  }
}

/** Moves `commit` between the local `repo` and the host's run repository, leaving out what `exclude` (commits the receiving side has) reaches: the bundle's size. */
export type MoveCommit = (channel: HostChannel, repo: string, commit: string, exclude?: readonly string[]) => Promise<Result<{ bytes: number }, ObjectsError>>;

/**
 * Sends `commit` of the local `repo` into the host's run repository: nothing when the host has it
 * already (a run resumed, a second attempt from the same base), else a bundle leaving out what
 * those of `candidates` the host has reach (earlier bases: an attempt's base then costs its
 * new commits only).
 */
export const sendCommit: MoveCommit = async (channel, repo, commit, candidates = []) => {
  const has = await channel.request({ op: 'has-commits', commits: [commit, ...candidates] });
  if (!has.ok) return has;
  if (has.value.present.includes(commit)) return ok({ bytes: 0 });
  const bundle = await bundleOf(repo, commit, has.value.present);
  if (!bundle.ok) return bundle;
  const received = await channel.request({ op: 'receive-objects', commit }, { input: bundle.value });
  return received.ok ? ok({ bytes: bundle.value.length }) : received;
};

/** Fetches `commit` from the host's run repository into the local `repo` (its objects; no ref is set). */
export const fetchCommit: MoveCommit = async (channel, repo, commit, exclude = []) => {
  const chunks: Buffer[] = [];
  const sent = await channel.request(
    { op: 'send-objects', commit, exclude: [...exclude] },
    { onEvent: (event) => event.kind === 'data' && chunks.push(Buffer.from(event.data, 'base64')) },
  );
  if (!sent.ok) return sent;
  const bytes = Buffer.concat(chunks);
  if (bytes.length !== sent.value.bytes) return err(local(`${channel.name} sent ${sent.value.bytes} bytes of the bundle and ${bytes.length} arrived`));
  // `git bundle unbundle` reads a file, not stdin.
  const file = join(tmpdir(), `foreman-bundle-${randomBytes(6).toString('hex')}.bundle`);
  await writeFile(file, bytes, { mode: 0o600 });
  try {
    const unbundled = await runGit(['bundle', 'unbundle', file], { cwd: repo });
    if (!unbundled.ok) return err(local(unbundled.error.message));
    const there = await runGit(['cat-file', '-e', `${commit}^{commit}`], { cwd: repo });
    return there.ok ? ok({ bytes: bytes.length }) : err(local(`the bundle from ${channel.name} does not hold ${commit}`));
  } finally {
    await rm(file, { force: true });
  }
};
