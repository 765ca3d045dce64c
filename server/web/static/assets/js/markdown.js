// @ts-check
// markdown.js is the project's own Markdown renderer. It builds DOM nodes and sets only
// textContent, so no markup in a message can become HTML; links must be http(s) or mailto and
// open in a new tab with rel=noopener.

const inlineRules = [
  { re: /`([^`\n]+)`/, make: (m) => el('code', m[1]) },
  { re: /\*\*([^*\n]+?)\*\*/, make: (m, r) => el('strong', r(m[1])) },
  { re: /~~([^~\n]+?)~~/, make: (m, r) => el('s', r(m[1])) },
  { re: /(?<![\w*])\*([^*\s][^*\n]*?)\*(?![\w*])/, make: (m, r) => el('em', r(m[1])) },
  { re: /(?<![\w_])_([^_\s][^_\n]*?)_(?![\w_])/, make: (m, r) => el('em', r(m[1])) },
  { re: /\[([^\]\n]+)\]\(([^)\s]+)\)/, make: (m, r) => link(m[2], r(m[1])) },
  { re: /\bhttps?:\/\/[^\s<>()]+[^\s<>().,;:!?'"]/, make: (m) => link(m[0], [document.createTextNode(m[0])]) },
  { re: /(?<![\w@])@([a-z0-9_-]{2,32})\b/i, make: (m) => el('span', '@' + m[1], 'mention') },
];

function el(tag, content, cls) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (typeof content === 'string') e.textContent = content;
  else for (const n of content) e.appendChild(n);
  return e;
}

// safeURL accepts absolute http(s) and mailto links only.
export function safeURL(raw) {
  try {
    const u = new URL(raw);
    return ['http:', 'https:', 'mailto:'].includes(u.protocol) ? u.href : null;
  } catch {
    return null;
  }
}

function link(href, children) {
  const url = safeURL(href);
  if (!url) return el('span', [document.createTextNode(`[`), ...children, document.createTextNode(`](${href})`)]);
  const a = el('a', children);
  a.href = url;
  a.target = '_blank';
  a.rel = 'noopener noreferrer';
  return a;
}

// inline renders one line of text into nodes.
export function inline(text) {
  const out = [];
  let rest = text;
  while (rest) {
    let best = null;
    for (const rule of inlineRules) {
      const m = rule.re.exec(rest);
      if (m && (!best || m.index < best.m.index)) best = { m, rule };
    }
    if (!best) { out.push(document.createTextNode(rest)); break; }
    if (best.m.index > 0) out.push(document.createTextNode(rest.slice(0, best.m.index)));
    out.push(best.rule.make(best.m, inline));
    rest = rest.slice(best.m.index + best.m[0].length);
  }
  return out;
}

function withBreaks(lines) {
  const out = [];
  lines.forEach((line, i) => {
    if (i) out.push(document.createElement('br'));
    out.push(...inline(line));
  });
  return out;
}

// render turns a Markdown body into a fragment of block elements.
export function render(body) {
  const frag = document.createDocumentFragment();
  const lines = String(body || '').replace(/\r\n?/g, '\n').split('\n');
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (/^```/.test(line)) {
      const code = [];
      i++;
      while (i < lines.length && !/^```/.test(lines[i])) code.push(lines[i++]);
      i++;
      const pre = el('pre', [el('code', code.join('\n'))]);
      frag.appendChild(pre);
      continue;
    }
    if (/^>\s?/.test(line)) {
      const quoted = [];
      while (i < lines.length && /^>\s?/.test(lines[i])) quoted.push(lines[i++].replace(/^>\s?/, ''));
      const bq = document.createElement('blockquote');
      bq.appendChild(render(quoted.join('\n')));
      frag.appendChild(bq);
      continue;
    }
    const item = /^\s*(?:[-*+]|(\d+)[.)])\s+/;
    if (item.test(line)) {
      const ordered = !!item.exec(line)[1];
      const list = document.createElement(ordered ? 'ol' : 'ul');
      while (i < lines.length && item.test(lines[i])) {
        list.appendChild(el('li', inline(lines[i].replace(item, ''))));
        i++;
      }
      frag.appendChild(list);
      continue;
    }
    if (!line.trim()) { i++; continue; }
    const para = [];
    while (i < lines.length && lines[i].trim() && !/^```|^>\s?/.test(lines[i]) && !item.test(lines[i])) para.push(lines[i++]);
    frag.appendChild(el('p', withBreaks(para)));
  }
  return frag;
}
