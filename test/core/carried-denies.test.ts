// The person's deny rules as a headless worker's settings carry them (src/core/sandbox/carried-denies.ts):
// a path relative to the project folder anchored at the repository and at the worker's worktree
// (at any depth too where Claude Code reads it so), everything else as written.

import { describe, expect, it } from 'vitest';
import { carriedDenies } from '../../src/core/sandbox/carried-denies.ts';

const roots = ['/wt/slot-1', '/home/p/repo'];

describe('carriedDenies', () => {
  it('anchors a relative path at each root, and a name with no inner / at any depth below it too', () => {
    expect(carriedDenies(['Read(./.env)'], roots)).toEqual([
      'Read(//wt/slot-1/.env)',
      'Read(//wt/slot-1/**/.env)',
      'Read(//home/p/repo/.env)',
      'Read(//home/p/repo/**/.env)',
    ]);
    expect(carriedDenies(['Edit(*.pem)'], ['/r'])).toEqual(['Edit(//r/*.pem)', 'Edit(//r/**/*.pem)']);
    expect(carriedDenies(['Read(secrets/)'], ['/r'])).toEqual(['Read(//r/secrets/)', 'Read(//r/**/secrets/)']);
  });

  it('keeps a path with an inner / and a /-anchored one at the root only', () => {
    expect(carriedDenies(['Read(config/keys/**)', 'Edit(/package-lock.json)', 'Write(./gen/out.js)'], ['/r'])).toEqual([
      'Read(//r/config/keys/**)',
      'Edit(//r/package-lock.json)',
      'Write(//r/gen/out.js)',
    ]);
  });

  it("carries absolute and home paths, bare tools and other tools' rules as written", () => {
    const asWritten = [
      'Read(//etc/shadow)',
      'Read(~/.aws/**)',
      'Edit(~other/x)',
      'Bash(git push:*)',
      'WebFetch(domain:example.com)',
      'WebSearch',
      'Read',
      'mcp__github',
    ];
    expect(carriedDenies(asWritten, roots)).toEqual(asWritten);
  });

  it("escapes pattern characters in a root, never in the person's pattern, and resolves ..", () => {
    expect(carriedDenies(['Read(./*.key)'], ['/w/a (1)'])).toEqual(['Read(//w/a \\(1\\)/*.key)', 'Read(//w/a \\(1\\)/**/*.key)']);
    expect(carriedDenies(['Read(../shared/secrets/**)'], ['/w/repo'])).toEqual(['Read(//w/shared/secrets/**)']);
  });

  it('says each rule once', () => {
    expect(carriedDenies(['Read(//x)', 'Read(//x)', 'Read(/a/b)'], ['/r', '/r'])).toEqual(['Read(//x)', 'Read(//r/a/b)']);
  });
});
