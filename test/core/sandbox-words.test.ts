// What foreman says of the sandbox: the line of each sandbox mode, and the network refusals it
// recognises in a sandboxed command's output. The outputs are real: each was printed inside the
// sandbox (@anthropic-ai/sandbox-runtime 0.0.78, bubblewrap) on Debian by npm 11.19.1, curl,
// git, wget, pip and Python 3.11, and node 20.20.2, reaching for a host the sandbox was not given.

import { describe, expect, it } from 'vitest';
import {
  describeNetworkRefusal,
  describeSandboxUse,
  networkRefusal,
  networkRefusalHint,
  planNetwork,
  type SandboxUse,
} from '../../src/core/sandbox/sandbox-words.ts';

const NPM_403 = `npm error code E403
npm error 403 403 Forbidden - GET https://registry.npmjs.org/uvu
npm error 403 In most cases, you or one of your dependencies are requesting a package version that is forbidden by your security policy, or on a server you do not have access to.
npm error A complete log of this run can be found in: /root/.npm/_logs/2026-11-29T07_46_57_159Z-debug-0.log
`;

/** npm before version 10 wrote `npm ERR!`. */
const OLD_NPM_403 = `npm ERR! code E403
npm ERR! 403 403 Forbidden - GET https://registry.npmjs.org/kleur
npm ERR! 403 In most cases, you or one of your dependencies are requesting
npm ERR! 403 a package version that is forbidden by your security policy, or
npm ERR! 403 on a server you do not have access to.
`;

const CURL_HTTPS = 'curl: (56) CONNECT tunnel failed, response 403\n';
const CURL_HTTP_BODY = 'Connection blocked by network allowlist\n';
const GIT = "fatal: unable to access 'https://github.com/lukeed/kleur/': CONNECT tunnel failed, response 403\n";
const WGET = 'Connecting to localhost (localhost)|127.0.0.1|:3128... connected.\nProxy tunneling failed: ForbiddenUnable to establish SSL connection.\n';
const PIP =
  "WARNING: Retrying (Retry(total=0, connect=None, read=None, redirect=None, status=None)) after connection broken by 'ProxyError('Cannot connect to proxy.', OSError('Tunnel connection failed: 403 Forbidden'))': /simple/six/\n";
const PYTHON_URLLIB = 'urllib.error.URLError: <urlopen error Tunnel connection failed: 403 Forbidden>\n';
/** node's own undici (in the node binary) through a proxy agent. */
const UNDICI = 'TypeError: fetch failed\n  [cause]: RequestAbortedError [AbortError]: Proxy response (403) !== 200 when HTTP Tunneling\n';

/** node 20's fetch does not use HTTP_PROXY: inside the sandbox it finds no name server. */
const NODE_FETCH = `TypeError: fetch failed
    at node:internal/deps/undici/undici:14976:13
    at process.processTicksAndRejections (node:internal/process/task_queues:95:5) {
  [cause]: Error: getaddrinfo EAI_AGAIN registry.npmjs.org
      at GetAddrInfoReqWrap.onlookupall [as oncomplete] (node:dns:122:26) {
    errno: -3001,
    code: 'EAI_AGAIN',
    syscall: 'getaddrinfo',
    hostname: 'registry.npmjs.org'
  }
}
`;
const NODE_HTTPS_GET = 'Error: getaddrinfo EAI_AGAIN example.com\n';
const PYTHON_SOCKET = 'socket.gaierror: [Errno -3] Temporary failure in name resolution\n';
const CURL_NO_PROXY = 'curl: (6) Could not resolve host: example.com\n';

describe('networkRefusal: what the sandbox refused, as commands print it', () => {
  it.each([
    ['npm (11)', NPM_403, 'registry.npmjs.org'],
    ['npm (before 10)', OLD_NPM_403, 'registry.npmjs.org'],
    ['curl, https', CURL_HTTPS, null],
    ['curl, http: the proxy’s body', CURL_HTTP_BODY, null],
    ['git', GIT, 'github.com'],
    ['wget', WGET, null],
    ['pip', PIP, null],
    ['Python urllib', PYTHON_URLLIB, null],
    ["node's undici through a proxy agent", UNDICI, null],
  ])('%s: the proxy refused', (_name, output, host) => {
    expect(networkRefusal(output, [])).toMatchObject({ kind: 'proxy', host });
  });

  it.each([
    ['node fetch', NODE_FETCH, 'registry.npmjs.org'],
    ['node https.get', NODE_HTTPS_GET, 'example.com'],
    ['Python socket', PYTHON_SOCKET, null],
    ['curl --noproxy', CURL_NO_PROXY, 'example.com'],
  ])('%s: went around the proxy and found no network', (_name, output, host) => {
    expect(networkRefusal(output, [])).toMatchObject({ kind: 'bypassed', host });
  });

  it('names the line that shows it', () => {
    expect(networkRefusal(`> test\n${NPM_403}`, [])?.line).toBe('npm error 403 403 Forbidden - GET https://registry.npmjs.org/uvu');
  });

  it.each([
    ['a test that fails', 'FAIL test/a.test.ts\n  expected 1 to be 2\n'],
    ['a connection refused on the sandbox’s own loopback', "curl: (7) Failed to connect to 127.0.0.1 port 36123 after 0 ms: Couldn't connect to server\n"],
    ['node refused on loopback', 'Error: connect ECONNREFUSED 127.0.0.1:37233\n'],
    ["npm's 404", 'npm error code E404\nnpm error 404 Not Found - GET https://registry.npmjs.org/no-such-package-xyz - Not found\n'],
    ['a host that does not exist (node)', 'Error: getaddrinfo ENOTFOUND no-such-host.invalid\n'],
    ['a 403 of a test server', 'AssertionError: expected 403 to equal 200\n'],
    ['curl -f on a 403', 'curl: (22) The requested URL returned error: 403\n'],
    ['nothing', ''],
  ])('%s is not a refusal', (_name, output) => {
    expect(networkRefusal(output, [])).toBeNull();
  });

  it("a 403 from a host the command was allowed is the server's, not the sandbox's", () => {
    expect(networkRefusal(NPM_403, ['registry.npmjs.org'])).toBeNull();
    expect(networkRefusal(NPM_403, ['*.npmjs.org'])).toBeNull();
    expect(networkRefusal(NPM_403, ['registry.npmjs.org:443'])).toBeNull();
    expect(networkRefusal(NPM_403, ['registry.yarnpkg.com'])).toMatchObject({ kind: 'proxy', host: 'registry.npmjs.org' });
    expect(networkRefusal(GIT, ['*.github.com'])).toMatchObject({ host: 'github.com' });
    // An entry with a port allows that port only: the registry's 443 is not 8443.
    expect(networkRefusal(NPM_403, ['registry.npmjs.org:8443'])).toMatchObject({ kind: 'proxy', host: 'registry.npmjs.org' });
  });

  it('a later line naming a host the command was not allowed is the refusal, after one the server refused', () => {
    const output = `npm error 403 403 Forbidden - GET https://registry.npmjs.org/private\nnpm error 403 403 Forbidden - GET https://cdn.example.com/x.tgz\n`;
    expect(networkRefusal(output, ['registry.npmjs.org'])).toMatchObject({ kind: 'proxy', host: 'cdn.example.com' });
  });
});

describe('networkRefusalHint', () => {
  it('names the sandbox and the setting that allows the host', () => {
    expect(networkRefusalHint(NPM_403, { sandboxed: true, allowed: [], setting: 'context.checkNetwork' })).toBe(
      'the sandbox refused the connection to registry.npmjs.org, which the plan\'s context.checkNetwork does not list: add "registry.npmjs.org" to context.checkNetwork to allow it',
    );
    expect(networkRefusalHint(CURL_HTTPS, { sandboxed: true, allowed: [], setting: 'context.setupNetwork' })).toBe(
      "the sandbox refused a network connection (a host the plan's context.setupNetwork does not list): name the hosts the command needs in context.setupNetwork",
    );
    expect(networkRefusalHint(NODE_FETCH, { sandboxed: true, allowed: [], setting: 'context.checkNetwork' })).toBe(
      "the sandbox refused a network call to registry.npmjs.org made without its proxy (a sandboxed command reaches the network only through HTTP_PROXY/HTTPS_PROXY, to the hosts of the plan's context.checkNetwork): use a tool that follows those variables, with its hosts in context.checkNetwork",
    );
  });

  it('says nothing of a command that ran without the sandbox: the same words mean something else there', () => {
    expect(networkRefusalHint(NPM_403, { sandboxed: false, allowed: [], setting: 'context.checkNetwork' })).toBeNull();
    expect(networkRefusalHint(NODE_FETCH, { sandboxed: false, allowed: [], setting: 'context.checkNetwork' })).toBeNull();
  });

  it('describes a refusal whose host is unknown, made without the proxy', () => {
    expect(describeNetworkRefusal({ kind: 'bypassed', host: null, line: '' }, 'context.setupNetwork')).toMatch(
      /^the sandbox refused a network call made without its proxy .*context\.setupNetwork\)/,
    );
  });
});

describe('describeSandboxUse: the line of each sandbox mode', () => {
  const everything: SandboxUse = {
    mode: 'auto',
    sandboxed: true,
    unavailable: null,
    install: null,
    commands: ['checks', 'setup', 'gate', 'workers'],
    ...planNetwork(undefined),
  };
  const install = 'install bubblewrap, socat and ripgrep';

  it('sandboxed (auto, where it runs): what runs in it and what it reaches', () => {
    expect(describeSandboxUse(everything)).toBe(
      "sandbox: on (--sandbox auto): checks, the gate and the workers' Bash commands run in it, reaching no network but their own loopback (context.checkNetwork would name hosts); the setup command runs in it, reaching the package registries (npm's, yarn's, PyPI, crates.io, Go's and your npm registry) and the hosts context.setupNetwork adds",
    );
  });

  it("sandboxed (on), with the plan's hosts", () => {
    const use = {
      ...everything,
      mode: 'on' as const,
      ...planNetwork({ checkNetwork: ['registry.npmjs.org', '*.github.com'], setupNetwork: ['npm.example.com'] }),
    };
    expect(describeSandboxUse(use)).toBe(
      "sandbox: on (--sandbox on): checks, the gate and the workers' Bash commands run in it, reaching only registry.npmjs.org and *.github.com (context.checkNetwork) and their own loopback; the setup command runs in it, reaching the package registries (npm's, yarn's, PyPI, crates.io, Go's and your npm registry) and npm.example.com (context.setupNetwork)",
    );
    const only = { ...everything, ...planNetwork({ setupNetwork: ['no-defaults', 'npm.example.com'] }) };
    expect(describeSandboxUse(only)).toContain('the setup command runs in it, reaching only npm.example.com (context.setupNetwork)');
    const none = { ...everything, ...planNetwork({ setupNetwork: ['no-defaults'] }) };
    expect(describeSandboxUse(none)).toContain('the setup command runs in it, reaching no network but its own loopback (context.setupNetwork: no-defaults)');
  });

  it('the probe: its setup command and its checks, no gate, no workers', () => {
    expect(describeSandboxUse({ ...everything, commands: ['setup', 'checks'] })).toBe(
      "sandbox: on (--sandbox auto): checks run in it, reaching no network but their own loopback (context.checkNetwork would name hosts); the setup command runs in it, reaching the package registries (npm's, yarn's, PyPI, crates.io, Go's and your npm registry) and the hosts context.setupNetwork adds",
    );
    expect(describeSandboxUse({ ...everything, commands: ['checks'] })).toBe(
      'sandbox: on (--sandbox auto): checks run in it, reaching no network but their own loopback (context.checkNetwork would name hosts)',
    );
  });

  it('auto where it cannot run: why, what runs without it, what to install', () => {
    expect(describeSandboxUse({ ...everything, sandboxed: false, unavailable: 'bubblewrap (bwrap) not installed', install })).toBe(
      "sandbox: off (--sandbox auto: it cannot run here: bubblewrap (bwrap) not installed): checks, the setup command, the gate and the workers' Bash commands run without it, with this machine's network and files, and the workers' Bash stays limited to the commands their tasks are judged by; to sandbox them, install bubblewrap, socat and ripgrep",
    );
  });

  it('off', () => {
    expect(describeSandboxUse({ ...everything, mode: 'off', sandboxed: false })).toBe(
      "sandbox: off (--sandbox off): checks, the setup command, the gate and the workers' Bash commands run without it, with this machine's network and files, and the workers' Bash stays limited to the commands their tasks are judged by",
    );
    expect(describeSandboxUse({ ...everything, mode: 'off', sandboxed: false, commands: ['setup', 'checks'] })).toBe(
      "sandbox: off (--sandbox off): the setup command and checks run without it, with this machine's network and files",
    );
  });

  it('on where it cannot run: the run refuses', () => {
    expect(describeSandboxUse({ ...everything, mode: 'on', sandboxed: false, unavailable: 'bubblewrap (bwrap) not installed', install })).toBe(
      'sandbox: cannot run here (bubblewrap (bwrap) not installed): with --sandbox on the run refuses to start (exit 3); install bubblewrap, socat and ripgrep',
    );
  });

  it('never says "without the sandbox" when it runs in it', () => {
    for (const mode of ['auto', 'on'] as const) expect(describeSandboxUse({ ...everything, mode })).not.toMatch(/without/);
  });
});
