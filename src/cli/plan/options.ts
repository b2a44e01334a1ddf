import type { OptionSpec } from '../command.ts';

export const planOption: Record<string, OptionSpec> = {
  plan: {
    type: 'string',
    valueName: 'FILE',
    description:
      "the plan file (default: .design/plan.json in the current folder or the nearest folder above it in the repository, as git finds its repository; else at the repository's top)",
  },
};
export const jsonOption: Record<string, OptionSpec> = {
  json: { type: 'boolean', description: 'print JSON instead of text' },
};
