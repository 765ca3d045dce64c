// The Markdown renderer without a browser: it builds into the small document below, and each
// tree is written out as markup-like text (text escaped) to compare with what the renderer must
// make. Nothing a message says may become an element the rules do not make.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { render, safeURL } from '../static/assets/js/markdown.js';
import { miniDocument } from '../static/assets/js/lazy/minidom.js';

globalThis.document = miniDocument;

const escape = (s) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
function out(node) {
  if ('text' in node) return escape(node.text);
  const attrs = ['className', 'href', 'target', 'rel'].filter((k) => node[k]).map((k) => ` ${k === 'className' ? 'class' : k}="${node[k]}"`).join('');
  return `<${node.tag}${attrs}>${node.children.map(out).join('')}</${node.tag}>`;
}
const md = (body) => render(body).children.map(out).join('');

test('inline: bold, italic, strike, code, mentions', () => {
  assert.equal(md('**bold** and *it* and _also_ ~~gone~~ `a*b*c`'),
    '<p><strong>bold</strong> and <em>it</em> and <em>also</em> <s>gone</s> <code>a*b*c</code></p>');
  assert.equal(md('ping @ana_l, not mail@example.com'), '<p>ping <span class="mention">@ana_l</span>, not mail@example.com</p>');
  assert.equal(md('snake_case_name and 2*3*4'), '<p>snake_case_name and 2*3*4</p>');
});

test('links: http(s) and mailto only, opened apart from the page', () => {
  const rel = 'target="_blank" rel="noopener noreferrer"';
  assert.equal(md('see https://example.com/a_b.'), `<p>see <a href="https://example.com/a_b" ${rel}>https://example.com/a_b</a>.</p>`);
  assert.equal(md('[docs](https://natter.chat/docs)'), `<p><a href="https://natter.chat/docs" ${rel}>docs</a></p>`);
  assert.equal(md('[x](javascript:alert(1))'), '<p><span>[x](javascript:alert(1)</span>)</p>');
  assert.equal(safeURL('mailto:ana@example.com'), 'mailto:ana@example.com');
  assert.equal(safeURL('data:text/html,hi'), null);
  assert.equal(safeURL('/relative'), null);
});

test('blocks: paragraphs with breaks, code fences, quotes, lists', () => {
  assert.equal(md('one\ntwo\n\nthree'), '<p>one<br></br>two</p><p>three</p>');
  assert.equal(md('```\nconst a = 1 < 2;\n**not bold**\n```\nafter'), '<pre><code>const a = 1 &lt; 2;\n**not bold**</code></pre><p>after</p>');
  assert.equal(md('> quoted **text**\n> more\nplain'), '<blockquote><p>quoted <strong>text</strong><br></br>more</p></blockquote><p>plain</p>');
  assert.equal(md('- one\n* two\n\n1. first\n2) second'), '<ul><li>one</li><li>two</li></ul><ol><li>first</li><li>second</li></ol>');
  assert.equal(md('\r\n# not a heading\r\n'), '<p># not a heading</p>');
});

test('markup in a message stays text', () => {
  assert.equal(md('<img src=x onerror=alert(1)> <b>hi</b>'), '<p>&lt;img src=x onerror=alert(1)&gt; &lt;b&gt;hi&lt;/b&gt;</p>');
  assert.equal(md(''), '');
  assert.equal(md(null), '');
});
