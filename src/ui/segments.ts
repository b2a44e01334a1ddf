// A terminal line made of styled pieces, cut to the terminal's width before it is coloured, so
// that no escape sequence is cut and no line wraps.

export type Style = 'bold' | 'dim' | 'green' | 'red' | 'yellow' | 'cyan';
const SGR: Record<Style, [string, string]> = {
  bold: ['\x1b[1m', '\x1b[22m'],
  dim: ['\x1b[2m', '\x1b[22m'],
  green: ['\x1b[32m', '\x1b[39m'],
  red: ['\x1b[31m', '\x1b[39m'],
  yellow: ['\x1b[33m', '\x1b[39m'],
  cyan: ['\x1b[36m', '\x1b[39m'],
};
export interface Segment {
  text: string;
  style?: Style;
}

/** Join segments, cut to `width` visible characters (with `…`), then colour them. */
export function fitSegments(segments: readonly Segment[], width: number, color: boolean): string {
  let room = Math.max(0, width);
  let out = '';
  const total = segments.reduce((n, s) => n + [...s.text].length, 0);
  const cut = total > room;
  if (cut) room = Math.max(0, room - 1);
  for (const seg of segments) {
    if (room <= 0) break;
    const chars = [...seg.text];
    const text = chars.length > room ? chars.slice(0, room).join('') : seg.text;
    room -= Math.min(chars.length, room);
    out += color && seg.style && text ? `${SGR[seg.style][0]}${text}${SGR[seg.style][1]}` : text;
  }
  if (cut && width > 0) out += '…';
  return out;
}
