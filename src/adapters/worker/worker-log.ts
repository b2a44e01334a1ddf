// What a headless run adds to a worker's log (`.design/worker-<i>.log`) once its worker has
// ended: the whole output of the attempt's acceptance checks that failed, as the check kept it.
// The failure reason (journal, retry prompt, live view, report) holds only the output's end;
// the log is where a person reads all of it.

import { appendFile } from 'node:fs/promises';
import { type AcceptanceResult, describeCheckEnd } from '../../core/index.ts';

/** Appends each failed check's output to the log at `logPath`; a log that cannot be written fails nothing. */
export async function logFailedChecks(logPath: string, results: readonly AcceptanceResult[]): Promise<void> {
  const failed = results.filter((result) => !result.passed);
  if (failed.length === 0) return;
  const text = failed.map(checkOutputSection).join('');
  await appendFile(logPath, text).catch(() => undefined);
}

/** One failed check's section of the log: what failed, then all it printed. */
export function checkOutputSection(result: AcceptanceResult): string {
  const how = describeCheckEnd(result);
  const output = result.output.trim() === '' ? '(it printed nothing)\n' : result.output.endsWith('\n') ? result.output : `${result.output}\n`;
  return `==== acceptance check failed (${result.criterion}): ${how}; its whole output ====\n${output}==== end of its output ====\n`;
}
