import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { readExamples } from '../../scripts/train-guardrails.js';
import { scanViews } from '../../src/skills/guardrails/normalize.js';
import { RULE_SOURCES } from '../../src/skills/guardrails/regex.js';
import { parseRule, prefixes, RuleIndex, type RuleNode, type Shape } from '../../src/skills/guardrails/rule-index.js';

const never = { expired: () => false };

describe('guardrails rule index: prefixes', () => {
  /** the strings a prefix stands for */
  const strings = (shape: Shape): string[] => shape.reduce<string[]>((out, chars) => out.flatMap((head) => [...chars].map((c) => head + c)), ['']);
  const heads = (source: string) => [...new Set(prefixes(parseRule(source), 3).flatMap(strings))].sort();

  it('reads literals, groups, alternation and the optional quantifier; a shorter head is a whole match', () => {
    assert.deepEqual(heads('(?:ab|c)d?e'), ['abd', 'abe', 'cde', 'ce']);
  });

  it('reads classes, ranges, bounded and unbounded repeats', () => {
    assert.deepEqual(heads('[a-c]x'), ['ax', 'bx', 'cx']);
    assert.deepEqual(heads('(?:[ab] ){0,2}z'), ['a a', 'a b', 'a z', 'b a', 'b b', 'b z', 'z']);
    assert.deepEqual(heads('ab+'), ['ab', 'abb']);
    assert.deepEqual(heads('a{2,}'), ['aa', 'aaa']);
  });

  it('keeps a class as one position, so a run of any word does not multiply the prefixes (as strings these would be 36^4 and more)', () => {
    const w = 'abcdefghijklmnopqrstuvwxyz0123456789';
    const sorted = (shapes: readonly Shape[]) => shapes.map((shape) => JSON.stringify(shape)).sort();
    assert.deepEqual(sorted(prefixes(parseRule('[a-z0-9]+ ab'), 4)), sorted([[w, ' ', 'a', 'b'], [w, w, ' ', 'a'], [w, w, w, ' '], [w, w, w, w]]));
  });

  it('takes assertions (\\b, lookahead, lookbehind) as matching anything', () => {
    assert.deepEqual(heads('\\bab(?! c)\\b(?<=b)d'), ['abd']);
  });

  it('refuses what it cannot read instead of guessing', () => {
    for (const source of ['a.b', '[^a]b', '[\\s]', '(?<name>a)', 'a\\wb', '(ab', 'ab)']) assert.throws(() => parseRule(source), /rule-index/, source);
    assert.throws(() => new RuleIndex([{ source: ' ?ab', tag: 'x' }]), /begin with a word character/);
  });
});

describe('guardrails rule index: which rules a scan tries', () => {
  /** the rules whose regex the scan of `text` tried ('wanted' is asked just before a try), and what matched */
  function tried(sources: string[], text: string) {
    const index = new RuleIndex(sources.map((source) => ({ source, tag: source })));
    const asked: string[] = [];
    const matched: string[] = [];
    index.scan(
      text,
      (tag) => (asked.push(tag), true),
      (tag, at) => (matched.push(`${tag}@${at}`), false),
    );
    return { asked, matched };
  }

  it('does not try a rule where the characters after the first three of a word cannot go on to a match', () => {
    assert.deepEqual(tried(['write ?out'], 'please write to me'), { asked: [], matched: [] });
    assert.deepEqual(tried(['write ?out'], 'please write out the text'), { asked: ['write ?out'], matched: ['write ?out@7'] });
    assert.deepEqual(tried(['write ?out'], 'writeout'), { asked: ['write ?out'], matched: ['write ?out@0'] });
  });

  it('tries a short rule whatever follows its match, and a class of any word at every letter', () => {
    assert.deepEqual(tried(['ab'], 'ab cdefgh'), { asked: ['ab'], matched: ['ab@0'] });
    assert.deepEqual(tried(['ab'], 'x ab'), { asked: ['ab'], matched: ['ab@2'] });
    assert.deepEqual(tried(['run (?:[a-z0-9]+ ){0,2}env'], 'run a9 zz env now'), { asked: ['run (?:[a-z0-9]+ ){0,2}env'], matched: ['run (?:[a-z0-9]+ ){0,2}env@0'] });
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
function indexedMatches(text: string, wordStarts?: Int32Array): Set<string> {
  const out = new Set<string>();
  INDEX.scan(
    text,
    () => true,
    (tag, at) => {
      out.add(`${tag}@${at}`);
      return false;
    },
    wordStarts,
  );
  return out;
}

describe('guardrails rule index: the same matches as one alternation per value', () => {
  it('on every folded view of the shipped dataset', () => {
    let matches = 0;
    for (const { text } of readExamples()) {
      for (const view of scanViews(text, { deadline: never, decodedChars: 16 * 1024 })) {
        const plain = plainMatches(view.text);
        matches += plain.size;
        assert.deepEqual(indexedMatches(view.text), plain, view.text);
        // visiting only the word starts fold noted finds the same
        if (view.wordStarts) assert.deepEqual(indexedMatches(view.text, view.wordStarts), plain, view.text);
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
