// The quick switcher's matching (lazy/match.js): what a query finds and in which order, and that
// narrowing from one keystroke to the next finds what a search of every candidate would.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Matcher, score } from '../static/assets/js/lazy/match.js';

const channel = (name, extra = '') => ({ kind: 'channel', rank: 0, label: name, extra });
const person = (name, handle) => ({ kind: 'person', rank: 2, label: name, extra: `@${handle}` });

// A thousand channels c-0000…c-0999, two named ones, and people.
function workspace() {
  const items = [];
  for (let i = 0; i < 1000; i++) items.push(channel(`c-${String(i).padStart(4, '0')}`));
  items.push(channel('design-reviews', 'Design reviews'), channel('random'));
  items.push(person('Ada Lovelace', 'ada'), person('Ben Okafor', 'ben'), person('Chloe Design', 'chloe'));
  return items;
}

const labels = (found) => found.map((x) => x.item.label);

test('a prefix comes first, then a word inside, then letters in order', () => {
  const m = new Matcher(workspace());
  assert.deepEqual(labels(m.find('des', 30)), ['design-reviews', 'Chloe Design']);
  assert.deepEqual(labels(m.find('c-0015', 30)), ['c-0015']);
  // "015" starts a word in c-0150…c-0159 (after "-"), and is inside c-0015: words first, then
  // equal scores in collation order.
  const inside = labels(m.find('015', 30));
  assert.deepEqual(inside.slice(0, 3), ['c-0150', 'c-0151', 'c-0152']);
  assert.equal(inside[10], 'c-0015');
  // Letters in order, not together: "rvw" in design-reviews.
  assert.deepEqual(labels(m.find('rvw', 30)), ['design-reviews']);
  // A handle finds its person.
  assert.deepEqual(labels(m.find('@ben', 30)), ['Ben Okafor']);
  assert.deepEqual(labels(m.find('zzz', 30)), []);
});

test('thirty of a thousand matches, in order', () => {
  const m = new Matcher(workspace());
  const got = labels(m.find('c', 30));
  assert.equal(got.length, 30);
  assert.deepEqual(got.slice(0, 3), ['c-0000', 'c-0001', 'c-0002']);
  assert.equal(got[29], 'c-0029');
});

test('typing on narrows to what still matches: the same answers as a fresh search', () => {
  const m = new Matcher(workspace());
  for (const q of ['c', 'c-', 'c-0', 'c-00', 'c-001', 'c-0015', 'c-001', 'd', 'de', 'des', 'desw', 'd', 'a', 'ad', 'ada']) {
    assert.deepEqual(labels(m.find(q, 30)), labels(new Matcher(workspace()).find(q, 30)), q);
  }
});

test('a candidate whose score rises as letters are added is not lost by narrowing', () => {
  // "ab" is far apart in this name (a negative score, not shown); "abc" puts b and c together.
  const name = 'a-----------------bc';
  assert.ok(score('ab', name) < 0 && score('abc', name) >= 0);
  const m = new Matcher([channel(name)]);
  assert.deepEqual(labels(m.find('ab', 30)), []);
  assert.deepEqual(labels(m.find('abc', 30)), [name]);
});

test('people answered while the switcher is open join the narrowed search', () => {
  const m = new Matcher(workspace());
  m.find('f', 30);
  m.find('fa', 30);
  m.add([person('Farid Person 5', 'farid5'), person('Grace Person 6', 'grace6')]);
  assert.deepEqual(labels(m.find('far', 30)), ['Farid Person 5']);
  assert.deepEqual(labels(m.find('gra', 30)), ['Grace Person 6']);
});
