import type { OptionSpec } from '../command.ts';

export const planOption: Record<string, OptionSpec> = {
  plan: { type: 'string', valueName: 'FILE', description: 'the plan file (default: .design/plan.json under the current directory)' },
};
export const jsonOption: Record<string, OptionSpec> = {
  json: { type: 'boolean', description: 'print JSON instead of text' },
};
