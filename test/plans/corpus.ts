// The plan corpus: `broken/NAME.json` with `broken/NAME.expected.txt` (one line per expected
// problem; each problem message starts with its line), and `valid/NAME.json`.

import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

export const PLANS_DIR = import.meta.dirname;
export const BROKEN_DIR = join(PLANS_DIR, 'broken');
export const VALID_DIR = join(PLANS_DIR, 'valid');

export interface BrokenCase {
  name: string;
  file: string;
  text: string;
  expected: string[];
}

export function brokenCorpus(): BrokenCase[] {
  return readdirSync(BROKEN_DIR)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => ({
      name: f.replace(/\.json$/, ''),
      file: join(BROKEN_DIR, f),
      text: readFileSync(join(BROKEN_DIR, f), 'utf8'),
      expected: readFileSync(join(BROKEN_DIR, f.replace(/\.json$/, '.expected.txt')), 'utf8')
        .trimEnd()
        .split('\n'),
    }));
}

export const brokenText = (name: string): string => readFileSync(join(BROKEN_DIR, `${name}.json`), 'utf8');
export const validFile = (name: string): string => join(VALID_DIR, `${name}.json`);
export const validText = (name: string): string => readFileSync(validFile(name), 'utf8');
