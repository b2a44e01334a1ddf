// The one spelling of foreman's commands in messages: the plugin's launcher inside the built
// plugin, a checkout's launcher when it started the process, else `npx tsx scripts/…` in a
// checkout's top folder; and no message spells them any other way.

import { mkdtempSync, readFileSync, readdirSync, rmdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ownLayout } from '../../src/adapters/layout.ts';
import { approvalHint, commandHint, type Layout, programName } from '../../src/core/command-hint.ts';

const plugin: Layout = { kind: 'plugin', launcher: '/home/me/.claude/plugins/cache/foreman/foreman/0.1.0/bin/foreman' };
const checkout: Layout = { kind: 'checkout' };

describe('commandHint', () => {
  it.each([
    [plugin, 'plan', 'retry 3', '/home/me/.claude/plugins/cache/foreman/foreman/0.1.0/bin/foreman plan retry 3'],
    [plugin, 'execute', '', '/home/me/.claude/plugins/cache/foreman/foreman/0.1.0/bin/foreman execute'],
    [checkout, 'plan', 'retry 3', 'npx tsx scripts/plan.ts retry 3'],
    [checkout, 'execute', '--dry-run', 'npx tsx scripts/execute.ts --dry-run'],
    // Away from the checkout's top folder, where `npx tsx scripts/…` does not run: its launcher.
    [{ kind: 'checkout', launcher: '/src/foreman/bin/foreman' }, 'plan', 'retry 3', '/src/foreman/bin/foreman plan retry 3'],
  ] as const)('%j %s %j → %s', (layout, program, args, expected) => {
    expect(commandHint(program, args, layout)).toBe(expected);
  });

  it('quotes a launcher path the shell would split or expand', () => {
    expect(programName('plan', { kind: 'plugin', launcher: "/Users/Jo Doe/it's/bin/foreman" })).toBe(`'/Users/Jo Doe/it'\\''s/bin/foreman' plan`);
    expect(programName('plan', { kind: 'plugin', launcher: '/opt/$HOME/bin/foreman' })).toBe(`'/opt/$HOME/bin/foreman' plan`);
  });

  it('spells the approval pair for a task or for any task', () => {
    expect(approvalHint(4, checkout)).toBe(
      '`npx tsx scripts/plan.ts approve 4`, `npx tsx scripts/plan.ts revise 4 --feedback …` or `npx tsx scripts/plan.ts reject 4 --reason …`',
    );
    expect(approvalHint('N', plugin)).toBe(
      `\`${plugin.launcher} plan approve N\`, \`${plugin.launcher} plan revise N --feedback …\` or \`${plugin.launcher} plan reject N --reason …\``,
    );
  });

  it('the sources under tsx are a checkout; away from its top folder, named by its launcher', () => {
    expect(ownLayout()).toEqual(checkout);
    const top = process.cwd();
    try {
      process.chdir(tmpdir());
      expect(ownLayout()).toEqual({ kind: 'checkout', launcher: join(top, 'bin', 'foreman') });
    } finally {
      process.chdir(top);
    }
  });

  it('started by its launcher (which names itself as argv0), a checkout is named by it, in its top folder too', () => {
    const launcher = join(process.cwd(), 'bin', 'foreman');
    expect(ownLayout(launcher)).toEqual({ kind: 'checkout', launcher });
    // Another program's name (npx, node) is not the launcher's.
    expect(ownLayout(join(process.cwd(), 'node_modules', '.bin', 'tsx'))).toEqual(checkout);
  });

  it('a current folder that was removed is away from the top folder: named by its launcher, not an error', () => {
    const top = process.cwd();
    const gone = mkdtempSync(join(tmpdir(), 'foreman-gone-'));
    try {
      process.chdir(gone);
      rmdirSync(gone);
      expect(ownLayout()).toEqual({ kind: 'checkout', launcher: join(top, 'bin', 'foreman') });
    } finally {
      process.chdir(top);
    }
  });
});

describe('one spelling', () => {
  const root = join(import.meta.dirname, '..', '..');
  const sources = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
      e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
    );

  it('no code outside core/command-hint.ts spells a foreman command for one layout only', () => {
    const layoutBound = /\bplan\.ts [a-z]|scripts\/(plan|execute)\.ts|bin\/foreman (plan|execute)|npx tsx/;
    const found = sources(join(root, 'src'))
      // The generated validator holds schemas/plan.schema.json's text, a data file this test does not read.
      .filter((file) => !file.endsWith(join('core', 'command-hint.ts')) && !file.endsWith('.generated.ts'))
      .flatMap((file) =>
        readFileSync(file, 'utf8')
          .split('\n')
          .flatMap((line, i) => (/^\s*(\/\/|\*|\/\*)/.test(line) || !layoutBound.test(line) ? [] : [`${relative(root, file)}:${i + 1}: ${line.trim()}`])),
      );
    expect(found).toEqual([]);
  });
});
