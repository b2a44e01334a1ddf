// The run's workspaces with hosts (`--host`): an attempt placed on an ssh host works in that
// host's workspaces (./host.ts); every other one — `local?slots=N`, the gate's, setup's — in the
// plan's local pool (./local.ts), as without hosts. One interface for the engine either way.

import type { Result } from '../../core/failure.ts';
import type { Workspace, WorkspaceRequest, Workspaces } from './index.ts';
import type { HostWorkspaces } from './host.ts';

export class PlacedWorkspaces implements Workspaces {
  private readonly listeners: Array<(host: string, reason: string) => void> = [];

  constructor(
    private readonly local: Workspaces,
    private readonly hosts: ReadonlyMap<string, HostWorkspaces>,
  ) {}

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
