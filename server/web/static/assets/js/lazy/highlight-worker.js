// @ts-check
// lazy/highlight-worker.js is the project's own small tokenizer for code previews, run in a
// Worker that the page stops after its time limit. It knows Go, JavaScript (and TypeScript as
// JavaScript), Python, shell, JSON and CSS: comments, strings, numbers, keywords and operators.
// Message in: { text, lang, cap }; out: { out } — a JSON array of runs, each a plain string or
// [class, text] — or { error: 'output' } as soon as that array would pass cap characters.

const words = (s) => new Set(s.split(' '));
const keywords = {
  go: words('break case chan const continue default defer else fallthrough for func go goto if import interface map package range return select struct switch type var nil true false iota'),
  js: words('async await break case catch class const continue debugger default delete do else export extends false finally for from function if import in instanceof let new null of return static super switch this throw true try typeof undefined var void while with yield interface type enum implements'),
  python: words('and as assert async await break class continue def del elif else except False finally for from global if import in is lambda None nonlocal not or pass raise return True try while with yield self'),
  shell: words('if then else elif fi for while until do done case esac function in return export local readonly set unset echo exit'),
  json: words('true false null'),
  css: words('important inherit initial unset none auto'),
};

const number = ['n', /(?:0[xXoObB][\da-fA-F_]+|\d[\d_]*(?:\.\d+)?(?:[eE][+-]?\d+)?)[a-zA-Z%]*/];
const word = ['w', /[A-Za-z_$][\w$]*/];
const op = ['p', /[+\-*/%&|^<>=!?:;.,(){}[\]~@#]/];
const dq = ['s', /"(?:[^"\\\n]|\\.)*"/];
const sq = ['s', /'(?:[^'\\\n]|\\.)*'/];
const line = ['c', /\/\/.*/];
// An unterminated /* is not a comment: the scanner takes the '/' as an operator and tries again
// one character on, so a file of nothing but "/* " costs quadratic time. The worker's 2-second
// limit bounds it; the page then shows the text unhighlighted.
const block = ['c', /\/\*[\s\S]*?\*\//];
const hash = ['c', /#.*/];
const space = ['', /\s+/];

const rules = {
  go: [space, line, block, dq, sq, ['s', /`[^`]*`/], number, word, op],
  js: [space, line, block, dq, sq, ['s', /`(?:[^`\\]|\\[\s\S])*`/], number, word, op],
  python: [space, hash, ['s', /"""[\s\S]*?"""|'''[\s\S]*?'''/], dq, sq, number, word, op],
  shell: [space, hash, dq, ['s', /'[^']*'/], ['s', /\$\{?\w+\}?/], number, word, op],
  json: [space, dq, number, word, op],
  css: [space, block, dq, sq, ['k', /@[\w-]+/], number, ['w', /[\w-]+/], op],
};

// Each language's rules become one sticky expression, a group per rule, the first listed
// winning: one match per token instead of one attempt per rule.
const compiled = {};
function scanner(lang) {
  const key = rules[lang] ? lang : 'js';
  if (!compiled[key]) {
    const table = rules[key];
    compiled[key] = { re: new RegExp(table.map(([, re]) => `(${re.source})`).join('|'), 'y'), classes: table.map(([c]) => c) };
  }
  return compiled[key];
}

class OutputFull extends Error {}

// tokenize returns the runs of text as JSON, merging plain text between highlighted runs.
export function tokenize(text, lang, cap) {
  const { re, classes } = scanner(lang);
  const kw = keywords[lang] || keywords.js;
  const parts = [];
  let size = 2;
  let plain = '';
  const push = (json) => {
    size += json.length + 1;
    if (size > cap) throw new OutputFull();
    parts.push(json);
  };
  const flush = () => { if (plain) { push(JSON.stringify(plain)); plain = ''; } };
  let i = 0;
  while (i < text.length) {
    re.lastIndex = i;
    const m = re.exec(text);
    if (!m) { plain += text[i++]; continue; }
    const tok = m[0];
    // Only the rule that matched has its group set.
    let cls = classes[m.findIndex((g, j) => j > 0 && g !== undefined) - 1];
    i += tok.length;
    if (cls === 'w' && kw.has(tok)) cls = 'k';
    if (cls === '' || cls === 'w') { plain += tok; continue; }
    flush();
    push(JSON.stringify([cls, tok]));
  }
  flush();
  return `[${parts.join(',')}]`;
}

self.onmessage = ({ data }) => {
  try {
    self.postMessage({ out: tokenize(data.text, data.lang, data.cap) });
  } catch (err) {
    self.postMessage({ error: err instanceof OutputFull ? 'output' : String(err && err.message || err) });
  }
};
