// The demo's plan and its scripted model. Each task's prompt carries a `TASK-MARKER: <name>`
// line; the scripted model (test/support/model-server.ts) picks the scenario by that marker and
// answers the real Claude Code CLI turn by turn with real tool calls (Read, Write, Edit, Bash),
// which the CLI runs in the demo repository. Nothing here talks to a real model.

import { join } from 'node:path';
import type { Plan, Task } from '../src/core/plan/plan.ts';
import {
  type ContentBlock,
  scenario,
  type Scenario,
  type ScriptedRequest,
  text,
  toolUse,
  turn,
  type TurnScript,
  variants,
} from '../test/support/model-server.ts';

/** The first attempt of this task writes a naive wordCount(); its acceptance check fails. */
export const RETRY_TASK = 2;

// ---------------------------------------------------------------------------------------------
// The plan

const marker = (name: string) => `TASK-MARKER: ${name}`;

interface DemoTask {
  subject: string;
  prompt: string;
  blockedBy: number[];
  metadata: Task['metadata'];
  /** [criterion, shell command] pairs: the acceptance checks. */
  checks: Array<[string, string]>;
  fallback?: string;
}

function task(name: string, t: DemoTask): Task {
  const { checks, fallback, prompt, ...rest } = t;
  return {
    ...rest,
    prompt: `${prompt}\n\n${marker(name)}`,
    agent: {
      model: 'haiku',
      acceptanceCriteria: checks.map(([criterion, check]) => ({ criterion, check })),
      ...(fallback ? { fallback } : {}),
    },
  };
}

/** `node --input-type=module -e "<lines>"`: an ES module assertion run in the repository. */
const nodeCheck = (...lines: string[]) => `node --input-type=module -e "${lines.join('; ')}"`;

export function demoPlan(): Plan {
  return {
    schemaVersion: 3,
    goal: 'Grow textkit from an empty entry point into three tested, documented string helpers: slugify, truncate and wordCount',
    context: {
      stack: 'Node.js 20, plain ES modules, no dependencies',
      conventions: 'One helper per file in src/, re-exported from src/index.js; tests with node:test in test/',
      testCommand: 'node --test',
    },
    tasks: [
      task('slugify', {
        subject: 'Add slugify()',
        prompt: [
          'Create src/slugify.js exporting `slugify(text)`: lower case, accents removed, every run of other',
          'characters replaced by a single "-", no leading or trailing "-". Add test/slugify.test.js with',
          'node:test cases, and run `node --test test/slugify.test.js` before you finish.',
        ].join('\n'),
        blockedBy: [],
        metadata: { type: 'implementation', files: { create: ['src/slugify.js', 'test/slugify.test.js'], modify: [] } },
        checks: [['the slugify tests pass', 'node --test test/slugify.test.js']],
      }),
      task('truncate', {
        subject: 'Add truncate()',
        prompt: [
          'Create src/truncate.js exporting `truncate(text, max)`: text of at most `max` characters, ending',
          'with "…" when it had to be cut. Add test/truncate.test.js with node:test cases.',
        ].join('\n'),
        blockedBy: [],
        metadata: { type: 'implementation', files: { create: ['src/truncate.js', 'test/truncate.test.js'], modify: [] } },
        checks: [['the truncate tests pass', 'node --test test/truncate.test.js']],
      }),
      // Its specification lives in spec/, outside `node --test`'s default patterns: the gate (the
      // plan's test command) must pass on the starting commit, where wordCount does not exist yet.
      task('word-count', {
        subject: 'Implement wordCount() to the spec in spec/word-count.spec.js',
        prompt: [
          'Create src/word-count.js exporting `wordCount(text)` so that the existing specification',
          'spec/word-count.spec.js passes. Do not change the test.',
        ].join('\n'),
        blockedBy: [],
        metadata: { type: 'implementation', files: { create: ['src/word-count.js'], modify: [] }, reads: ['spec/word-count.spec.js'] },
        checks: [['the wordCount specification passes', 'node --test spec/word-count.spec.js']],
        fallback: 'split on runs of any whitespace and ignore empty pieces; run the specification before reporting COMPLETED',
      }),
      task('export-slugify', {
        subject: 'Export slugify from the entry point',
        prompt: 'Re-export `slugify` from src/index.js (keep everything else in the file).',
        blockedBy: [0],
        metadata: { type: 'implementation', files: { create: [], modify: ['src/index.js'] } },
        checks: [
          [
            'src/index.js exports slugify',
            nodeCheck("import { slugify } from './src/index.js'", "if (slugify('Hello, World') !== 'hello-world') process.exit(1)"),
          ],
        ],
      }),
      task('export-truncate', {
        subject: 'Export truncate from the entry point',
        prompt: 'Re-export `truncate` from src/index.js (keep everything else in the file).',
        blockedBy: [1],
        metadata: { type: 'implementation', files: { create: [], modify: ['src/index.js'] } },
        checks: [
          ['src/index.js exports truncate', nodeCheck("import { truncate } from './src/index.js'", "if (truncate('abcdef', 4) !== 'abc…') process.exit(1)")],
        ],
      }),
      task('docs', {
        subject: 'Export wordCount and document the API in the README',
        prompt: [
          'Re-export `wordCount` from src/index.js, then replace the "(To be written.)" line of README.md',
          'with a short description of slugify, truncate and wordCount, each with an example. Run the',
          'whole test suite (`node --test`) before you finish.',
        ].join('\n'),
        blockedBy: [2, 3, 4],
        metadata: { type: 'implementation', files: { create: [], modify: ['src/index.js', 'README.md'] } },
        checks: [
          [
            'the README documents every helper',
            nodeCheck(
              "import { readFileSync } from 'node:fs'",
              "const readme = readFileSync('README.md', 'utf8')",
              "for (const name of ['slugify', 'truncate', 'wordCount']) if (!readme.includes(name)) process.exit(1)",
            ),
          ],
          [
            'src/index.js exports all three helpers',
            nodeCheck(
              "import * as m from './src/index.js'",
              "for (const name of ['slugify', 'truncate', 'wordCount']) if (typeof m[name] !== 'function') process.exit(1)",
            ),
          ],
          ['the whole test suite passes', 'node --test'],
        ],
      }),
    ],
  };
}

// ---------------------------------------------------------------------------------------------
// What the "model" writes

const SLUGIFY = `/** A URL-friendly slug: lower case, accents removed, words joined by "-". */
export function slugify(text) {
  return text
    .normalize('NFKD')
    .replace(/[\\u0300-\\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');
}
`;

const SLUGIFY_TEST = `import assert from 'node:assert/strict';
import test from 'node:test';
import { slugify } from '../src/slugify.js';

test('joins words with a dash, in lower case', () => {
  assert.equal(slugify('Hello, World!'), 'hello-world');
});

test('removes accents', () => {
  assert.equal(slugify('Crème brûlée'), 'creme-brulee');
});

test('has no leading or trailing dash', () => {
  assert.equal(slugify('  -- Top 10 --  '), 'top-10');
});
`;

const TRUNCATE = `/** \`text\` cut to at most \`max\` characters, ending with "…" when it was cut. */
export function truncate(text, max) {
  if (text.length <= max) return text;
  if (max < 1) return '';
  return \`\${text.slice(0, max - 1).trimEnd()}…\`;
}
`;

const TRUNCATE_TEST = `import assert from 'node:assert/strict';
import test from 'node:test';
import { truncate } from '../src/truncate.js';

test('leaves short text alone', () => {
  assert.equal(truncate('hello', 10), 'hello');
});

test('cuts long text and marks the cut', () => {
  assert.equal(truncate('hello world', 8), 'hello w…');
  assert.ok(truncate('a'.repeat(50), 12).length <= 12);
});
`;

const WORD_COUNT_NAIVE = `/** The number of words in \`text\`. */
export function wordCount(text) {
  return text.split(' ').length;
}
`;

const WORD_COUNT = `/** The number of words in \`text\`: runs of whitespace separate words. */
export function wordCount(text) {
  return text.split(/\\s+/).filter(Boolean).length;
}
`;

const README_API = `slugify(text) makes a URL-friendly slug: \`slugify('Crème brûlée!')\` is \`'creme-brulee'\`.

truncate(text, max) shortens text to at most max characters: \`truncate('hello world', 8)\` is \`'hello w…'\`.

wordCount(text) counts the words: \`wordCount('  one two\\nthree ')\` is \`3\`.

    import { slugify, truncate, wordCount } from 'textkit';`;

const VERSION_LINE = "export const VERSION = '0.1.0';";
const exportLine = (name: string, file: string) => `export { ${name} } from './${file}';`;

// ---------------------------------------------------------------------------------------------
// The scripted turns

/** Every tool result of the conversation so far that came back as an error. */
function toolErrors(req: ScriptedRequest): string[] {
  const out: string[] = [];
  for (const m of req.messages) {
    if (!Array.isArray(m.content)) continue;
    for (const b of m.content) {
      if (b['type'] === 'tool_result' && b['is_error'] === true) out.push(JSON.stringify(b['content']).slice(0, 200));
    }
  }
  return out;
}

/** Whether the last tool result is a `node --test` run with no failure. */
const testsPassed = (req: ScriptedRequest) => req.toolResults.some((r) => /^# fail 0$/m.test(r.content) && !r.is_error);

export interface Pace {
  /** Multiplies every scripted delay; 0 answers at once. */
  factor: number;
}

export function demoScenarios(pace: Pace): Scenario[] {
  const at = (req: ScriptedRequest, rel: string) => join(req.cwd ?? '.', rel);
  /** One model turn, answered after `ms` (scaled by the pace), so the live view is watchable. */
  const step =
    (ms: number, blocks: (req: ScriptedRequest) => ContentBlock[]): TurnScript =>
    (req) =>
      turn(blocks(req), { delayMs: Math.round(ms * pace.factor) });
  /** The last turn: the status line, FAILED if a tool call of the conversation went wrong. */
  const finish = (ms: number, summary: string, opts: { needPassingTests?: boolean } = {}): TurnScript =>
    step(ms, (req) => {
      const errors = toolErrors(req);
      if (errors.length > 0) return [text(`FAILED: a tool call went wrong: ${errors[0]}`)];
      if (opts.needPassingTests && !testsPassed(req)) return [text('FAILED: the tests do not pass')];
      return [text(`Done.\nCOMPLETED: ${summary}`)];
    });
  const runTests = (command: string) => toolUse('Bash', { command, description: 'Run the tests' });
  const addExport = (name: string, file: string): TurnScript[] => [
    step(500, (req) => [text('Reading the entry point first.'), toolUse('Read', { file_path: at(req, 'src/index.js') })]),
    step(700, (req) => [
      toolUse('Edit', { file_path: at(req, 'src/index.js'), old_string: VERSION_LINE, new_string: `${VERSION_LINE}\n${exportLine(name, file)}` }),
    ]),
    finish(400, `src/index.js re-exports ${name}`),
  ];

  return [
    scenario({
      name: 'slugify',
      match: marker('slugify'),
      turns: [
        step(600, (req) => [text('Writing slugify() first.'), toolUse('Write', { file_path: at(req, 'src/slugify.js'), content: SLUGIFY })]),
        step(700, (req) => [text('Now its tests.'), toolUse('Write', { file_path: at(req, 'test/slugify.test.js'), content: SLUGIFY_TEST })]),
        step(500, () => [runTests('node --test test/slugify.test.js')]),
        finish(400, 'slugify() in src/slugify.js with 3 passing tests', { needPassingTests: true }),
      ],
    }),
    scenario({
      name: 'truncate',
      match: marker('truncate'),
      turns: [
        step(700, (req) => [text('Writing truncate() and its tests.'), toolUse('Write', { file_path: at(req, 'src/truncate.js'), content: TRUNCATE })]),
        step(800, (req) => [toolUse('Write', { file_path: at(req, 'test/truncate.test.js'), content: TRUNCATE_TEST })]),
        finish(500, 'truncate() in src/truncate.js with tests'),
      ],
    }),
    // The retry: attempt 1 splits on single spaces and does not run the specification, so the
    // orchestrator's acceptance check fails; attempt 2 (its prompt says "This is attempt 2" and
    // quotes the failing check) does it right and runs the tests itself.
    ...variants(marker('word-count'), [
      {
        name: 'word-count, attempt 2',
        when: 'This is attempt 2',
        turns: [
          step(600, (req) => [
            text('The previous attempt failed the specification; reading it again.'),
            toolUse('Read', { file_path: at(req, 'spec/word-count.spec.js') }),
          ]),
          step(700, (req) => [
            text('Splitting on runs of whitespace this time.'),
            toolUse('Write', { file_path: at(req, 'src/word-count.js'), content: WORD_COUNT }),
          ]),
          step(500, () => [runTests('node --test spec/word-count.spec.js')]),
          finish(400, 'wordCount() splits on runs of whitespace; the specification passes', { needPassingTests: true }),
        ],
      },
      {
        name: 'word-count, attempt 1',
        turns: [
          step(600, (req) => [text('Reading the specification.'), toolUse('Read', { file_path: at(req, 'spec/word-count.spec.js') })]),
          step(700, (req) => [
            text('Words are separated by spaces.'),
            toolUse('Write', { file_path: at(req, 'src/word-count.js'), content: WORD_COUNT_NAIVE }),
          ]),
          finish(400, 'wordCount() in src/word-count.js'),
        ],
      },
    ]),
    scenario({ name: 'export-slugify', match: marker('export-slugify'), turns: addExport('slugify', 'slugify.js') }),
    scenario({ name: 'export-truncate', match: marker('export-truncate'), turns: addExport('truncate', 'truncate.js') }),
    scenario({
      name: 'docs',
      match: marker('docs'),
      turns: [
        step(600, (req) => [
          text('Reading the entry point and the README.'),
          toolUse('Read', { file_path: at(req, 'src/index.js') }),
          toolUse('Read', { file_path: at(req, 'README.md') }),
        ]),
        step(700, (req) => [
          toolUse('Edit', {
            file_path: at(req, 'src/index.js'),
            old_string: VERSION_LINE,
            new_string: `${VERSION_LINE}\n${exportLine('wordCount', 'word-count.js')}`,
          }),
        ]),
        step(800, (req) => [
          text('Documenting the API.'),
          toolUse('Edit', { file_path: at(req, 'README.md'), old_string: '(To be written.)', new_string: README_API }),
        ]),
        step(500, () => [text('Running the whole suite.'), runTests('node --test')]),
        finish(400, 'wordCount exported; README documents slugify, truncate and wordCount; all tests pass', { needPassingTests: true }),
      ],
    }),
  ];
}
