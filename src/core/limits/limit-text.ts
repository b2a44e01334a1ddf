// What Claude Code's words say of a limit, pure. A subscription's usage limit reaches a worker as
// text — its result (headless) or a subagent's reply (in-session) — in the forms Claude Code
// 2.1.330 writes (test/support/CLI-NOTES.md): "You've hit your 5-hour limit · resets 8:17pm
// (UTC)", "You've hit your limit · resets Nov 28, 4:05pm (America/New_York)", "You're out of extra
// usage · resets 5pm", and, from older versions, "Claude AI usage limit reached|1749924000" (an
// epoch second). The reset is read as the first such wall-clock time after `now` in the zone
// named (the local zone when none is), and taken as the end of the minute named: Claude Code
// writes the reset to the minute (`9:33pm` for 21:33:02), so waiting until then is never short.

/** A limit the words tell of: the account's usage limit (or another 429), and when it resets. */
export interface LimitText {
  /** The account's usage limit (not a momentary rate limit). */
  usage: boolean;
  /** When it resets (epoch ms), when the words say. */
  resetAt?: number;
}

const USAGE = /you[’']ve hit your (?:[\w-]+ )*limit|you[’']re out of (?:extra )?usage|you[’']re out of usage credits|usage limit reached/i;
// Claude Code's words for the API's 429 (not any mention of rate limits: a task may be about them).
const RATE =
  /request rejected \(429\)|temporarily limiting requests|rate_limit_error|API Error: 429\b|error type rate_limit, HTTP 429|exceed your (?:account|organization)[’']s rate limit/i;
const EPOCH = /usage limit reached\|(\d{9,11})\b/i;
const RESETS = /\bresets\s+(?:([A-Z][a-z]{2})\s+(\d{1,2}),\s*)?(\d{1,2})(?::(\d{2}))?\s*(am|pm)(?:\s*\(([^)]+)\))?/i;
const MINUTE = 60_000;
const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];

/** What `text` says of a limit, or null when it speaks of none. */
export function readLimitText(text: string, now: number): LimitText | null {
  const usage = USAGE.test(text);
  if (!usage && !RATE.test(text)) return null;
  const epoch = EPOCH.exec(text);
  if (epoch) return { usage: true, resetAt: Number(epoch[1]) * 1000 };
  const named = resetTime(text, now);
  return named === undefined ? { usage } : { usage, resetAt: named + MINUTE };
}

/** The reset time a "resets 10pm (America/New_York)" says, as the first such moment after `now`. */
function resetTime(text: string, now: number): number | undefined {
  const m = RESETS.exec(text);
  if (!m) return undefined;
  const [, monthName, dayText, hourText, minuteText, meridiem, zoneText] = m;
  const hour12 = Number(hourText);
  const minute = minuteText === undefined ? 0 : Number(minuteText);
  if (hour12 < 1 || hour12 > 12 || minute > 59) return undefined;
  const hour = (hour12 % 12) + (meridiem!.toLowerCase() === 'pm' ? 12 : 0);
  const zone = zoneText?.trim();
  const wall = wallClock(now, zone);
  if (wall === null) return undefined;
  if (monthName !== undefined) {
    const month = MONTHS.indexOf(monthName.toLowerCase());
    const day = Number(dayText);
    if (month < 0 || day < 1 || day > 31) return undefined;
    // The year that puts the date nearest after now (a reset is never months in the past).
    for (const year of [wall.year, wall.year + 1]) {
      const at = instantOf({ year, month, day, hour, minute }, zone);
      if (at !== null && at > now - 86_400_000) return at;
    }
    return undefined;
  }
  // A time of day: today's, or tomorrow's once today's has passed.
  const today = instantOf({ year: wall.year, month: wall.month, day: wall.day, hour, minute }, zone);
  if (today === null) return undefined;
  return today > now ? today : (instantOf({ year: wall.year, month: wall.month, day: wall.day + 1, hour, minute }, zone) ?? undefined);
}

interface Wall {
  year: number;
  /** 0-based. */
  month: number;
  day: number;
  hour: number;
  minute: number;
}

/** The wall clock at `at` in `zone` (the local zone when undefined), or null for a zone Intl does not know. */
function wallClock(at: number, zone: string | undefined): Wall | null {
  let parts: Intl.DateTimeFormatPart[];
  try {
    parts = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      hourCycle: 'h23',
    }).formatToParts(at);
  } catch {
    return null;
  }
  const part = (type: string) => Number(parts.find((p) => p.type === type)?.value);
  return { year: part('year'), month: part('month') - 1, day: part('day'), hour: part('hour') % 24, minute: part('minute') };
}

/** The instant whose wall clock in `zone` is `wall` (days past the month's end roll over). */
function instantOf(wall: Wall, zone: string | undefined): number | null {
  const asUtc = Date.UTC(wall.year, wall.month, wall.day, wall.hour, wall.minute);
  // The zone's offset at the guess, then at the corrected guess (a change of offset between them: daylight saving).
  let guess = asUtc;
  for (let k = 0; k < 2; k++) {
    const seen = wallClock(guess, zone);
    if (seen === null) return null;
    const offset = Date.UTC(seen.year, seen.month, seen.day, seen.hour, seen.minute) - Math.floor(guess / 60_000) * 60_000;
    guess = asUtc - offset;
  }
  return guess;
}
