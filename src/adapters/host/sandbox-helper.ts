// The sandbox runtime's seccomp helper on a host: a native program (one per architecture) the
// runtime runs a sandboxed command through, to keep it from Unix sockets. It is not JavaScript, so
// the remote program's bundle cannot carry it; foreman sends the one for the host's architecture
// once per program version, to be kept beside the program, where the runtime looks for it.

import { readFile } from 'node:fs/promises';
import { err, ok, type Result } from '../../core/index.ts';
import { sandboxHelperPath } from '../layout.ts';
import type { HostChannel } from './channel.ts';
import type { ObjectsError } from './objects.ts';

/** Keeps the seccomp helper on the host unless it is there already, or the host's architecture has none: the bytes sent. */
export async function sendSandboxHelper(channel: HostChannel): Promise<Result<{ bytes: number }, ObjectsError>> {
  const asked = await channel.request({ op: 'sandbox-helper', keep: false });
  if (!asked.ok) return asked;
  const { arch, kept } = asked.value;
  if (kept || arch === null) return ok({ bytes: 0 });
  const path = sandboxHelperPath(arch);
  let bytes: Buffer;
  try {
    bytes = await readFile(path);
  } catch (caught) {
    return err({ kind: 'local', message: `the sandbox's helper for ${arch} could not be read at ${path}: ${(caught as Error).message}` });
  }
  const sent = await channel.request({ op: 'sandbox-helper', keep: true }, { input: bytes });
  return sent.ok ? ok({ bytes: bytes.length }) : sent;
}
