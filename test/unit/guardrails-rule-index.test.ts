import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { readExamples } from '../../scripts/train-guardrails.js';
import { scanViews } from '../../src/skills/guardrails/normalize.js';
import { RULE_SOURCES } from '../../src/skills/guardrails/regex.js';
import { parseRule, prefixes, RuleIndex, type RuleNode } from '../../src/skills/guardrails/rule-index.js';

const never = { expired: () => false };

describe('guardrails rule index: prefixes', () => {
  const heads = (source: string) => [...prefixes(parseRule(source), 3)].sort();

  it('reads literals, groups, alternation and the optional quantifier; a shorter head is a whole match', () => {
    assert.deepEqual(heads('(?:ab|c)d?e'), ['abd', 'abe', 'cde', 'ce']);
  });

  it('reads classes, ranges, bounded and unbounded repeats', () => {
    assert.deepEqual(heads('[a-c]x'), ['ax', 'bx', 'cx']);
    assert.deepEqual(heads('(?:[ab] ){0,2}z'), ['a a', 'a b', 'a z', 'b a', 'b b', 'b z', 'z']);
    assert.deepEqual(heads('ab+'), ['ab', 'abb']);
    assert.deepEqual(heads('a{2,}'), ['aa', 'aaa']);
  });

  it('takes assertions (\\b, lookahead, lookbehind) as matching anything', () => {
    assert.deepEqual(heads('\\bab(?! c)\\b(?<=b)d'), ['abd']);
  });

  it('refuses what it cannot read instead of guessing', () => {
    for (const source of ['a.b', '[^a]b', '[\\s]', '(?<name>a)', 'a\\wb', '(ab', 'ab)']) assert.throws(() => parseRule(source), /rule-index/, source);
    assert.throws(() => new RuleIndex([{ source: ' ?ab', tag: 'x' }]), /begin with a word character/);
  });
});

/** A seeded generator, so a failure reproduces. */
function random(seed: number) {
  let s = seed >>> 0;
  return (n: number) => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s % n;
  };
}

/** A random string the rule's regex (assertions aside) matches. */
function sample(node: RuleNode, pick: (n: number) => number): string {
  switch (node.kind) {
    case 'empty':
      return '';
    case 'chars':
      return node.chars[pick(node.chars.length)]!;
    case 'alt':
      return sample(node.options[pick(node.options.length)]!, pick);
    case 'seq':
      return node.items.map((item) => sample(item, pick)).join('');
    case 'repeat': {
      const times = node.min + pick(Math.min(node.max, node.min + 3) - node.min + 1);
      return Array.from({ length: times }, () => sample(node.node, pick)).join('');
    }
  }
}

/** Every (value, position) where a rule of that value matches, found the plain way: one alternation per value, tried at every position. */
function plainMatches(text: string): Set<string> {
  const out = new Set<string>();
  for (const tag of new Set(RULE_SOURCES.map((r) => r.tag))) {
    const re = new RegExp(`\\b(?:${RULE_SOURCES.filter((r) => r.tag === tag).map((r) => r.source).join('|')})\\b`, 'g');
    for (let m = re.exec(text); m !== null; m = re.exec(text)) {
      out.add(`${tag}@${m.index}`);
      re.lastIndex = m.index + 1;
    }
  }
  return out;
}

const INDEX = new RuleIndex(RULE_SOURCES);
function indexedMatches(text: string): Set<string> {
  const out = new Set<string>();
  INDEX.scan(
    text,
    () => true,
    (tag, at) => {
      out.add(`${tag}@${at}`);
      return false;
    },
  );
  return out;
}

describe('guardrails rule index: the same matches as one alternation per value', () => {
  it('on every folded view of the shipped dataset', () => {
    let matches = 0;
    for (const { text } of readExamples()) {
      for (const view of scanViews(text, { deadline: never, decodedChars: 16 * 1024 })) {
        const plain = plainMatches(view);
        matches += plain.size;
        assert.deepEqual(indexedMatches(view), plain, view);
      }
    }
    assert.ok(matches > 100, `the dataset's injections match (${matches})`);
  });

  it('on strings drawn from every rule, set among other words, glued to them and beside letters beyond ASCII', () => {
    const pick = random(20261129);
    const words = ['the', 'you', 'your', 'all', 'show', 'what', 'is', 'a', 'now', 'print', 'then', 'prompt', 'ignore', 'naïve', 'é', '42'];
    const filler = () => Array.from({ length: pick(4) }, () => words[pick(words.length)]).join(' ');
    let matches = 0;
    for (const { source } of RULE_SOURCES) {
      const node = parseRule(source);
      for (let i = 0; i < 40; i++) {
        const joint = [' ', ' ', '', 'é'][pick(4)]!;
        const text = `${filler()}${joint}${sample(node, pick)}${[' ', '', 'é'][pick(3)]}${filler()}`;
        const plain = plainMatches(text);
        matches += plain.size;
        assert.deepEqual(indexedMatches(text), plain, text);
      }
    }
    assert.ok(matches > RULE_SOURCES.length * 20, `most drawn strings match (${matches})`);
  });
});
