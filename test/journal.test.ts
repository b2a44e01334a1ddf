import { appendFileSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { journalPathFor, openJournal, parseJournal, readJournal } from '../src/adapters/store/journal.ts';
import { recordedRun } from './support/events.ts';

let dir: string;
let planPath: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'foreman-journal-'));
  planPath = path.join(dir, '.design', 'plan.json');
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const journaled = () => recordedRun().filter((e) => e.type !== 'task-activity');

describe('journal', () => {
  it('lives next to the plan', () => {
    expect(journalPathFor('/repo/.design/plan.json')).toBe('/repo/.design/events.jsonl');
  });

  it('appends one line per journaled event (not task-activity) and reads them back', async () => {
    const j = openJournal(planPath); // creates .design/
    for (const e of recordedRun()) j.append(e);
    await j.close();
    const text = readFileSync(j.path, 'utf8');
    expect(text.endsWith('\n')).toBe(true);
    expect(text.trimEnd().split('\n')).toHaveLength(journaled().length);
    expect(await readJournal(j.path)).toEqual({ events: journaled(), skipped: 0, torn: false });
  });

  it('appends to what earlier runs wrote; runs are told apart by runId', async () => {
    const a = openJournal(planPath);
    for (const e of recordedRun('run-a')) a.append(e);
    await a.close();
    const b = openJournal(planPath);
    for (const e of recordedRun('run-b')) b.append(e);
    await b.close();
    const { events } = await readJournal(journalPathFor(planPath));
    expect(events.filter((e) => e.runId === 'run-a')).toHaveLength(journaled().length);
    expect(events.filter((e) => e.runId === 'run-b')).toHaveLength(journaled().length);
  });

  it('tolerates a torn last line (a crash mid-write)', async () => {
    const j = openJournal(planPath);
    const events = journaled();
    for (const e of events.slice(0, 5)) j.append(e);
    await j.close();
    const full = JSON.stringify(events[5]);
    appendFileSync(j.path, full.slice(0, full.length >> 1));
    const read = await readJournal(j.path);
    expect(read).toEqual({ events: events.slice(0, 5), skipped: 0, torn: true });
  });

  it('starts a fresh line after a torn one, so the next run’s events survive', async () => {
    const j1 = openJournal(planPath);
    const events = journaled();
    j1.append(events[0]!);
    await j1.close();
    appendFileSync(j1.path, '{"type":"task-fin');
    const j2 = openJournal(planPath);
    j2.append(events[1]!);
    await j2.close();
    const read = await readJournal(j1.path);
    expect(read.events).toEqual([events[0], events[1]]);
    expect(read).toMatchObject({ skipped: 1, torn: false });
  });

  it('skips and counts garbage lines', () => {
    const [a, b] = journaled();
    const text = [JSON.stringify(a), 'not json', '[1,2]', '{"type":"x"}', '', JSON.stringify(b), ''].join('\n');
    expect(parseJournal(text)).toEqual({ events: [a, b], skipped: 3, torn: false });
  });

  it('reads a missing journal as empty', async () => {
    expect(await readJournal(path.join(dir, 'nope.jsonl'))).toEqual({ events: [], skipped: 0, torn: false });
  });

  it('refuses appends after close', async () => {
    const j = openJournal(planPath);
    await j.close();
    await j.close(); // idempotent
    expect(() => j.append(journaled()[0]!)).toThrow(/after close/);
  });
});
