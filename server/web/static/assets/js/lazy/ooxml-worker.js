// @ts-check
// lazy/ooxml-worker.js reads an XLSX (its sheets as tables) or a PPTX (each slide's text) in a
// Worker, so the page can stop it (terminate) when it runs past its time. Message in:
// { kind: 'xlsx' | 'pptx', bytes: ArrayBuffer, expanded: byte budget }; out: { sheets } or
// { slides }, or { error: 'malformed' | 'expanded', message }.
import { entries, read, Budget, Malformed, TooExpanded } from './zip.js';
import { walk, local } from './xml.js';

// What one preview shows at most; the rest is counted, not drawn.
const MAX_ROWS = 500;
const MAX_COLS = 50;

self.onmessage = async ({ data }) => {
  try {
    const bytes = new Uint8Array(data.bytes);
    const zip = entries(bytes);
    const budget = new Budget(data.expanded);
    const part = async (name) => {
      const e = zip.get(name);
      return e ? read(bytes, e, budget) : null;
    };
    self.postMessage(data.kind === 'xlsx' ? { sheets: await workbook(part) } : { slides: await presentation(part) });
  } catch (err) {
    if (err instanceof TooExpanded) self.postMessage({ error: 'expanded', message: err.message });
    else if (err instanceof Malformed) self.postMessage({ error: 'malformed', message: err.message });
    else self.postMessage({ error: 'malformed', message: String(err && err.message || err) });
  }
};

// rels maps a relationship part's ids to the part names they point at, resolved against dir.
async function rels(part, name, dir) {
  const xml = await part(name);
  const out = new Map();
  if (xml === null) return out;
  walk(xml, { open(tag, a) {
    if (local(tag) !== 'Relationship' || !a.Id || !a.Target) return;
    out.set(a.Id, a.Target.startsWith('/') ? a.Target.slice(1) : normalize(dir + a.Target));
  } });
  return out;
}

function normalize(path) {
  const out = [];
  for (const seg of path.split('/')) {
    if (seg === '..') out.pop();
    else if (seg !== '.' && seg !== '') out.push(seg);
  }
  return out.join('/');
}

async function workbook(part) {
  const book = await part('xl/workbook.xml');
  if (book === null) throw new Malformed('no xl/workbook.xml: not a spreadsheet');
  const sheets = [];
  walk(book, { open(tag, a) { if (local(tag) === 'sheet') sheets.push({ name: a.name || `Sheet ${sheets.length + 1}`, rid: a['r:id'] }); } });
  const targets = await rels(part, 'xl/_rels/workbook.xml.rels', 'xl/');
  const strings = await sharedStrings(part);
  const out = [];
  for (const s of sheets) {
    const xml = await part(targets.get(s.rid) || '');
    if (xml === null) throw new Malformed(`sheet "${s.name}" is missing`);
    out.push({ name: s.name, ...sheet(xml, strings) });
  }
  return out;
}

async function sharedStrings(part) {
  const xml = await part('xl/sharedStrings.xml');
  const out = [];
  if (xml === null) return out;
  let cur = null;
  let inT = 0;
  let phonetic = 0;
  walk(xml, {
    open(tag) { const n = local(tag); if (n === 'si') cur = ''; else if (n === 't') inT++; else if (n === 'rPh') phonetic++; },
    close(tag) { const n = local(tag); if (n === 'si') { out.push(cur); cur = null; } else if (n === 't') inT--; else if (n === 'rPh') phonetic--; },
    text(t) { if (cur !== null && inT && !phonetic) cur += t; },
  });
  return out;
}

// colIndex turns a cell reference's letters ("AB12") into a 0-based column.
function colIndex(ref) {
  let n = 0;
  for (const ch of ref) {
    const c = ch.charCodeAt(0);
    if (c < 65 || c > 90) break;
    n = n * 26 + (c - 64);
  }
  return n - 1;
}

function sheet(xml, strings) {
  const rows = [];
  let totalRows = 0;
  let totalCols = 0;
  let row = null;
  let cell = null;
  let inValue = 0;
  walk(xml, {
    open(tag, a) {
      const n = local(tag);
      if (n === 'row') { totalRows++; row = totalRows <= MAX_ROWS ? [] : null; }
      else if (n === 'c') cell = { col: a.r ? colIndex(a.r) : (row ? row.length : 0), type: a.t || 'n', text: '' };
      else if ((n === 'v' || n === 't') && cell) inValue++;
    },
    close(tag) {
      const n = local(tag);
      if ((n === 'v' || n === 't') && cell) inValue--;
      else if (n === 'c' && cell) {
        totalCols = Math.max(totalCols, cell.col + 1);
        if (row && cell.col >= 0 && cell.col < MAX_COLS) row[cell.col] = value(cell, strings);
        cell = null;
      } else if (n === 'row' && row) rows.push(Array.from(row, (v) => v ?? ''));
    },
    text(t) { if (cell && inValue) cell.text += t; },
  });
  return { rows, totalRows, totalCols };
}

function value(cell, strings) {
  switch (cell.type) {
    case 's': return strings[Number(cell.text)] ?? '';
    case 'b': return cell.text === '1' ? 'TRUE' : 'FALSE';
    default: return cell.text;
  }
}

async function presentation(part) {
  const pres = await part('ppt/presentation.xml');
  if (pres === null) throw new Malformed('no ppt/presentation.xml: not a presentation');
  const ids = [];
  walk(pres, { open(tag, a) { if (local(tag) === 'sldId') ids.push(a['r:id']); } });
  const targets = await rels(part, 'ppt/_rels/presentation.xml.rels', 'ppt/');
  const slides = [];
  for (const id of ids) {
    const xml = await part(targets.get(id) || '');
    if (xml === null) throw new Malformed(`slide ${slides.length + 1} is missing`);
    slides.push(slideText(xml));
  }
  return slides;
}

// slideText is a slide's paragraphs (a:p), each the text of its runs (a:t), empty ones left out.
function slideText(xml) {
  const paras = [];
  let cur = null;
  let inT = 0;
  walk(xml, {
    open(tag) { const n = local(tag); if (n === 'p' && tag.startsWith('a:')) cur = ''; else if (n === 't' && cur !== null) inT++; },
    close(tag) {
      const n = local(tag);
      if (n === 'p' && tag.startsWith('a:')) { if (cur && cur.trim()) paras.push(cur); cur = null; } else if (n === 't' && inT) inT--;
    },
    text(t) { if (inT && cur !== null) cur += t; },
  });
  return paras;
}
