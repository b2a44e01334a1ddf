// A `Result` a test expects to succeed: its value, or the test fails naming the error.

import type { Result } from '../../src/core/result.ts';

export async function succeeded<T, E>(step: Promise<Result<T, E>>): Promise<T> {
  const r = await step;
  if (!r.ok) throw new Error(`expected success, got ${JSON.stringify(r.error)}`);
  return r.value;
}
