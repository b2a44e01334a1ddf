// scripts/sandbox-host.mjs, as the remote program's bundle names it (src/adapters/host/program.ts): it runs as it is imported and exports nothing.
declare module '@foreman/sandbox-host' {}
