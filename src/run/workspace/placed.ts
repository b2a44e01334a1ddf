// The run's workspaces with hosts (`--host`): an attempt placed on an ssh host works in that
// host's workspaces (./host.ts); every other one — `local?slots=N`, the gate's, setup's — in the
// plan's local pool (./local.ts), as without hosts. One interface for the engine either way.

import type { Git } from '../../adapters/index.ts';
import type { Plan, Result } from '../../core/index.ts';
import type { HostLink } from '../hosts.ts';
import { HostWorkspaces } from './host.ts';
import { objectFormatOf } from './host-scripts.ts';
import type { Workspace, WorkspaceRequest, Workspaces } from './workspace.ts';
import type { LocalWorkspaces, WorkspaceUse } from './local.ts';

/** The local pool and a host's workspaces for each of `links`. */
export async function openPlacedWorkspaces(
  local: LocalWorkspaces,
  links: readonly HostLink[],
  run: { repo: string; git: Git; plan: Plan; planId: string; use: WorkspaceUse },
): Promise<PlacedWorkspaces> {
  const placed = new PlacedWorkspaces(local);
  const objectFormat = await objectFormatOf(run.repo);
  for (const link of links)
    placed.hosts.set(
      link.host.name,
      new HostWorkspaces({
        host: link.host,
        connect: () => link.connect(),
        local,
        repo: run.repo,
        git: run.git,
        planId: run.planId,
        plan: run.plan,
        objectFormat,
        setupTimeoutMs: run.use.setupTimeoutMs,
        sandbox: run.use.sandbox,
        onFault: (host, reason) => placed.fault(host, reason),
      }),
    );
  return placed;
}

export class PlacedWorkspaces implements Workspaces {
  private readonly listeners: Array<(host: string, reason: string) => void> = [];
  readonly hosts = new Map<string, HostWorkspaces>();

  constructor(private readonly local: Workspaces) {}

  make(request: WorkspaceRequest): Promise<Result<Workspace, string>> {
    const host = request.place === undefined ? undefined : this.hosts.get(request.place.host);
    return host === undefined ? this.local.make(request) : host.make(request);
  }

  async remove(): Promise<void> {
    await Promise.all([this.local.remove(), ...[...this.hosts.values()].map((host) => host.remove())]);
  }

  onHostFault(listener: (host: string, reason: string) => void): void {
    this.listeners.push(listener);
  }

  /** A host's failure, told to the engine. */
  fault(host: string, reason: string): void {
    for (const listener of this.listeners) listener(host, reason);
  }

  /** Ends every host's channel. */
  async close(): Promise<void> {
    await Promise.all([...this.hosts.values()].map((host) => host.close()));
  }
}
