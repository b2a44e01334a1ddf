// Putting the environment back after a test changed it.

/**
 * Makes `process.env` what `saved` holds again, in place: `process.env` stays Node's own object.
 * Replacing it with a copy (`process.env = saved`) leaves a plain object behind, on which setting
 * `TZ`, for one, no longer changes the time zone, for every file that runs after in the worker.
 */
export function restoreEnv(saved: NodeJS.ProcessEnv): void {
  for (const name of Object.keys(process.env)) if (!(name in saved)) delete process.env[name];
  for (const [name, value] of Object.entries(saved)) if (value !== undefined) process.env[name] = value;
}
