// The specification of wordCount(), written before the code: the plan's task makes it pass.
import assert from 'node:assert/strict';
import test from 'node:test';
import { wordCount } from '../src/word-count.js';

test('counts words separated by spaces', () => {
  assert.equal(wordCount('the quick brown fox'), 4);
});

test('an empty or blank string has no words', () => {
  assert.equal(wordCount(''), 0);
  assert.equal(wordCount('   '), 0);
});

test('runs of whitespace, tabs and newlines separate words', () => {
  assert.equal(wordCount('  one\ttwo\n\nthree  '), 3);
});
