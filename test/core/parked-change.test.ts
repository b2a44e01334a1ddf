// What the person reviewing a task's parked work is shown of it (src/core/integration/parked-change.ts).

import { describe, expect, it } from 'vitest';
import { changeSummary, parseChangedFiles } from '../../src/core/integration/parked-change.ts';

describe('a parked change', () => {
  it('reads name-status and numstat of the same diff into files, binary ones without line counts', () => {
    const files = parseChangedFiles(
      'M\0src/a.ts\0A\0src/new\tname.ts\0D\0old.txt\0M\0logo.png\0',
      '3\t1\tsrc/a.ts\x0010\t0\tsrc/new\tname.ts\x000\t4\told.txt\0-\t-\tlogo.png\0',
    );
    expect(files).toEqual([
      { path: 'src/a.ts', change: 'modified', added: 3, removed: 1 },
      { path: 'src/new\tname.ts', change: 'added', added: 10, removed: 0 },
      { path: 'old.txt', change: 'deleted', added: 0, removed: 4 },
      { path: 'logo.png', change: 'modified', added: null, removed: null },
    ]);
    expect(changeSummary(files)).toBe('4 files: src/a.ts (+3 −1), src/new\tname.ts (new, +10), old.txt (deleted, −4), logo.png (binary)');
  });

  it('names at most eight files and counts the rest; says when nothing changed', () => {
    const files = Array.from({ length: 10 }, (_, i) => ({ path: `f${i}`, change: 'modified' as const, added: 1, removed: 0 }));
    expect(changeSummary(files)).toBe(
      `10 files: ${files
        .slice(0, 8)
        .map((f) => `${f.path} (+1)`)
        .join(', ')}, and 2 more`,
    );
    expect(changeSummary([])).toBe('no file changed');
    expect(changeSummary([{ path: 'mode.sh', change: 'modified', added: 0, removed: 0 }])).toBe('1 file: mode.sh (no line)');
  });
});
