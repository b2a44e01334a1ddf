// How near one word is to another: a mistyped option, a misspelt field of a plan. Pure.

/**
 * The number of single-character edits between two words: insertions, deletions, substitutions,
 * and transpositions of two neighbouring characters (`tpye` is one edit from `type`), each
 * character edited once at most (the optimal string alignment distance).
 */
export function editDistance(a: string, b: string): number {
  let beforePrevious: number[] = [];
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      let distance = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) distance = Math.min(distance, beforePrevious[j - 2]! + 1);
      current[j] = distance;
    }
    beforePrevious = previous;
    previous = current;
  }
  return previous[b.length]!;
}

/**
 * The name a mistyped one most likely meant (an option without its dashes, a command): the only
 * one it begins, else the nearest within two edits; null when none is near.
 */
export function closestName(given: string, names: readonly string[]): string | null {
  if (given === '') return null;
  const begun = names.filter((name) => name.startsWith(given));
  if (begun.length === 1) return begun[0]!;
  let best: { name: string; distance: number } | null = null;
  for (const name of names) {
    const distance = editDistance(given, name);
    if (distance <= 2 && (best === null || distance < best.distance)) best = { name, distance };
  }
  return best?.name ?? null;
}
