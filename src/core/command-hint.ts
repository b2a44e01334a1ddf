// How a person runs a foreman command from where this copy of foreman is. Every message that
// names a foreman command spells it here, so there is one spelling:
// - the built plugin (bundled code; also its copy in a project's .claude/): its launcher,
//   `<plugin>/bin/foreman plan retry 3`, which runs from any directory;
// - a checkout (its sources): its launcher, `<checkout>/bin/foreman plan retry 3`, which runs
//   from anywhere, when the person started it (from any folder), or when the sources were started
//   with `npx tsx` anywhere but the checkout's top folder (a run given `--repo`), where that line
//   would not run; `npx tsx scripts/plan.ts retry 3` when that is what the person typed there.
// Pure: the layout is a parameter (adapters/layout.ts `ownLayout()` knows this process's).

/** foreman's two programs: the plan tool and the headless orchestrator. */
export type ForemanProgram = 'plan' | 'execute';

/**
 * Where the running code is: the built plugin (with its launcher's path) or a checkout (with its
 * launcher's path when the launcher started it, or the person is not in its top folder, where
 * `npx tsx scripts/…` runs).
 */
export type Layout = ({ kind: 'plugin'; launcher: string } | { kind: 'checkout'; launcher?: string }) & {
  /** The plan, when the plan tool run where the person is would not find it (a run given `--repo` or `--plan`): plan commands name it. */
  plan?: string;
  /** The repository, in that case too and whenever the person is not at its top: git commands name it (`git -C <repo> …`), since their paths are relative to the top. */
  repo?: string;
};

/** The command line that starts `program`: `/p/bin/foreman plan`, or `npx tsx scripts/plan.ts`. */
export function programName(program: ForemanProgram, layout: Layout): string {
  return layout.launcher !== undefined ? `${shellWord(layout.launcher)} ${program}` : `npx tsx scripts/${program}.ts`;
}

/** A foreman command as the person can type it, e.g. `commandHint('plan', 'retry 3', layout)`. */
export function commandHint(program: ForemanProgram, args: string, layout: Layout): string {
  const named =
    program === 'plan' && layout.plan !== undefined && !/(^|\s)--plan\b/.test(args) ? `${args === '' ? '' : `${args} `}--plan ${shellWord(layout.plan)}` : args;
  return named === '' ? programName(program, layout) : `${programName(program, layout)} ${named}`;
}

/** A git command as the person can type it where they are: `git show HEAD`, or `git -C /the/repo show HEAD` (`repo`: the repository, when they may not be in it). */
export const gitHint = (args: string, repo?: string): string => `git ${repo !== undefined ? `-C ${shellWord(repo)} ` : ''}${args}`;

/** A word (a path) as the shell reads it back: as it is when nothing in it is special, else single-quoted. */
export function shellWord(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}

/** How a person decides on tasks awaiting approval: "`… approve 3`, `… revise 3 --feedback …` or `… reject 3 --reason …`" (`tasks`: one number, several, `3 5`, or `N`). */
export function approvalHint(task: number | string, layout: Layout): string {
  return `\`${commandHint('plan', `approve ${task}`, layout)}\`, \`${commandHint('plan', `revise ${task} --feedback …`, layout)}\` or \`${commandHint('plan', `reject ${task} --reason …`, layout)}\``;
}
