import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fold } from '../../src/skills/guardrails/normalize.js';

const assertFolds = (cases: ReadonlyArray<[text: string, folded: string]>) => {
  for (const [text, folded] of cases) assert.equal(fold(text), folded, JSON.stringify(text));
};

test('fold reads ASCII as lowercase words and digits, with leetspeak undone and apostrophes dropped', () => {
  assertFolds([
    ['', ''],
    ['  ...  ', ''],
    ['Say hello.', 'say hello'],
    ["Don't IGNORE the  rules!", 'dont ignore the rules'],
    ['1gn0r3 4ll pr3v10u5 $y$tem @dmin 2 6 8', 'ignore all previous system admin 2 6 8'],
    ['tab\there\nnewline\u0001control', 'tab here newline control'],
  ]);
});

test('fold joins four or more spaced-out single characters, wherever they stand, and leaves three alone', () => {
  assertFolds([
    ['i g n o r e all', 'ignore all'],
    ['please i.g.n.o.r.e', 'please ignore'],
    ['a b c', 'a b c'],
    ['a b c d', 'abcd'],
    ['x a b dd', 'x a b dd'],
    ['x a b c dd', 'xabc dd'],
    ['ab c d e f', 'ab cdef'],
    ['a b c d. and e f g h', 'abcd and efgh'],
    ["a b c d'", 'abcd'],
  ]);
});
