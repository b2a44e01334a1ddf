// Reading foreman's own Markdown documentation (README.md, docs/, .design/README.md,
// bench/README.md) as a reader's tools do: the links GitHub renders, the anchors its headings
// get, the code blocks and the inline code, so tests can hold the documentation to the code.

import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from './execute.ts';

/** Every Markdown page of the documentation, relative to the repository's top. */
export function documentationFiles(): string[] {
  const docs = readdirSync(join(repoRoot, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `docs/${name}`);
  return ['README.md', ...docs, '.design/README.md', 'bench/README.md'];
}

export const readDoc = (file: string): string => readFileSync(join(repoRoot, file), 'utf8');

export interface CodeBlock {
  /** The info string after the opening fence: `sh`, `json`, `text`, or ''. */
  lang: string;
  body: string;
  /** 1-based line of the opening fence. */
  line: number;
}

/** The fenced code blocks of a page, in order. */
export function codeBlocks(markdown: string): CodeBlock[] {
  const blocks: CodeBlock[] = [];
  const lines = markdown.split('\n');
  let open: { lang: string; line: number; body: string[] } | null = null;
  lines.forEach((text, i) => {
    const fence = /^\s*```(.*)$/.exec(text);
    if (open === null) {
      if (fence) open = { lang: fence[1]!.trim(), line: i + 1, body: [] };
    } else if (fence && fence[1]!.trim() === '') {
      blocks.push({ lang: open.lang, body: open.body.join('\n'), line: open.line });
      open = null;
    } else {
      open.body.push(text);
    }
  });
  return blocks;
}

/** The page with its fenced code blocks blanked out (lines kept, so line numbers hold). */
export function proseOf(markdown: string): string {
  let inFence = false;
  return markdown
    .split('\n')
    .map((line) => {
      if (/^\s*```/.test(line)) {
        inFence = !inFence;
        return '';
      }
      return inFence ? '' : line;
    })
    .join('\n');
}

/** Inline code spans of the prose (`…` and `` … ``), never across a blank line. */
export function inlineCode(markdown: string): string[] {
  return [...proseOf(markdown).matchAll(/(`+)((?:(?!\n\n)[\s\S])+?)\1/g)].map((m) => m[2]!.trim().replace(/\s*\n\s*/g, ' '));
}

export interface Link {
  target: string;
  /** 1-based line where the link's text starts. */
  line: number;
}

/** The inline links of the prose, `[text](target)`: their text may run over lines and hold code. */
export function links(markdown: string): Link[] {
  // Inline code keeps its length with the brackets blanked, so `[x]` in code is no link and a
  // link's text may hold code.
  const prose = proseOf(markdown).replace(/(`+)((?:(?!\n\n)[\s\S])+?)\1/g, (span) => span.replace(/[[\]()]/g, ' '));
  return [...prose.matchAll(/\[([^\]]*)\]\(([^)\s]+)\)/g)].map((m) => ({ target: m[2]!, line: prose.slice(0, m.index).split('\n').length }));
}

/** The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to hyphens. */
export function slugOf(heading: string): string {
  return heading
    .replace(/`/g, '')
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');
}

/** Every anchor a page's headings give (a repeated heading gets `-1`, `-2`, … as on GitHub). */
export function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const result = new Set<string>();
  for (const line of proseOf(markdown).split('\n')) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!heading) continue;
    const slug = slugOf(heading[1]!);
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    result.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return result;
}

/** The part of a page under the heading `title` (exactly as written after the #s), to the next heading of its level or higher. */
export function section(markdown: string, title: string): string {
  const lines = markdown.split('\n');
  const start = lines.findIndex((line) => /^#{1,6} /.test(line) && line.replace(/^#+ /, '') === title);
  if (start === -1) throw new Error(`no heading "${title}"`);
  const level = /^#+/.exec(lines[start]!)![0].length;
  const end = lines.findIndex((line, i) => i > start && /^#{1,6} /.test(line) && /^#+/.exec(line)![0].length <= level);
  return lines.slice(start, end === -1 ? undefined : end).join('\n');
}

/** The rows of the Markdown tables in `text`, each as its cells (trimmed), separator rows left out. */
export function tableRows(text: string): string[][] {
  return text
    .split('\n')
    .filter((line) => line.startsWith('|') && !/^\|[\s|:-]+\|$/.test(line))
    .map((line) =>
      line
        .replace(/\\\|/g, '\u0000')
        .slice(1, line.endsWith('|') ? -1 : undefined)
        .split('|')
        // biome-ignore lint/suspicious/noControlCharactersInRegex: NUL stands in for an escaped pipe while the row is split
        .map((cell) => cell.replace(/\u0000/g, '|').trim()),
    );
}

/** What the README tells a project-skill install to put in `.claude/settings.json`: its JSON block with the hook. */
export function readmeHookSettings(): unknown {
  const block = codeBlocks(readDoc('README.md')).find((b) => b.lang === 'json' && b.body.includes('PreToolUse'));
  if (block === undefined) throw new Error('README.md has no JSON block with the PreToolUse hook');
  return JSON.parse(block.body);
}
