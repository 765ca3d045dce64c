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

const number = ['n', /(?:0[xob][\da-f_]+|\d[\d_]*(?:\.\d+)?(?:e[+-]?\d+)?)[a-z%]*/iy];
const word = ['w', /[A-Za-z_$][\w$]*/y];
const op = ['p', /[+\-*/%&|^<>=!?:;.,(){}[\]~@#]/y];
const dq = ['s', /"(?:[^"\\\n]|\\.)*"/y];
const sq = ['s', /'(?:[^'\\\n]|\\.)*'/y];
const line = ['c', /\/\/.*/y];
// An unterminated /* is not a comment: the scanner takes the '/' as an operator and tries again
// one character on, so a file of nothing but "/*" costs quadratic time. The worker's 2-second
// limit bounds it; the page then shows the text unhighlighted.
const block = ['c', /\/\*[\s\S]*?\*\//y];
const hash = ['c', /#.*/y];

const rules = {
  go: [line, block, dq, sq, ['s', /`[^`]*`/y], number, word, op],
  js: [line, block, dq, sq, ['s', /`(?:[^`\\]|\\[\s\S])*`/y], number, word, op],
  python: [hash, ['s', /"""[\s\S]*?"""|'''[\s\S]*?'''/y], dq, sq, number, word, op],
  shell: [hash, dq, ['s', /'[^']*'/y], ['s', /\$\{?\w+\}?/y], number, word, op],
  json: [dq, number, word, op],
  css: [block, dq, sq, ['k', /@[\w-]+/y], number, ['w', /[\w-]+/y], op],
};

class OutputFull extends Error {}

// tokenize returns the runs of text as JSON, merging plain text between highlighted runs.
export function tokenize(text, lang, cap) {
  const table = rules[lang] || rules.js;
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
    let hit = null;
    for (const [cls, re] of table) {
      re.lastIndex = i;
      const m = re.exec(text);
      if (m && m[0]) { hit = [cls, m[0]]; break; }
    }
    if (!hit) { plain += text[i++]; continue; }
    let [cls, tok] = hit;
    i += tok.length;
    if (cls === 'w') {
      if (!kw.has(tok)) { plain += tok; continue; }
      cls = 'k';
    }
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
