// @ts-check
// views/bots/agentmsg.js draws agents' durable activity apart from what people say: a message of
// kind agent_commentary is a muted aside, and one of kind agent_tool is a tool call collapsed to
// one line (its name) that opens on the arguments and the result. The spec gives these kinds a
// body and nothing more, so a tool message is read as JSON {name | tool, arguments | args |
// input, result | output | error} when its body is such an object, and otherwise as Markdown
// whose first line names the call and whose rest is the detail.
import { h } from '../../dom.js';
import { render as markdown } from '../../markdown.js';
import { registerMessageKind } from '../registry.js';

registerMessageKind('agent_commentary', (m) => h('div', { class: 'body agent-commentary' },
  h('span', { class: 'tag' }, 'commentary'), markdown(m.body)));

registerMessageKind('agent_tool', (m) => {
  const call = toolCall(m.body);
  const parts = call.sections.filter((s) => s.text !== '');
  const summary = h('summary', null, h('span', { class: 'tag' }, 'tool'), h('code', { class: 'tool-name' }, call.name),
    call.failed ? h('span', { class: 'tool-failed' }, 'failed') : null);
  if (!parts.length) return h('div', { class: 'body tool-call' }, h('div', { class: 'tool-head' }, ...summary.childNodes));
  return h('details', { class: 'body tool-call' }, summary, ...parts.map((s) => h('div', { class: 'tool-part' },
    h('div', { class: 'tool-label' }, s.label), s.code ? h('pre', { class: 'tool-code' }, s.text) : markdown(s.text))));
});

const pick = (o, keys) => keys.map((k) => o[k]).find((v) => v !== undefined && v !== null);
const show = (v) => (typeof v === 'string' ? v : JSON.stringify(v, null, 2));

// toolCall reads a tool message's body: { name, failed, sections: [{ label, text, code }] }.
export function toolCall(body) {
  const text = String(body || '');
  let o = null;
  if (/^\s*\{/.test(text)) { try { o = JSON.parse(text); } catch { o = null; } }
  if (o && typeof o === 'object' && !Array.isArray(o) && typeof pick(o, ['name', 'tool']) === 'string') {
    const args = pick(o, ['arguments', 'args', 'input']);
    const result = pick(o, ['result', 'output']);
    const error = pick(o, ['error']);
    return { name: pick(o, ['name', 'tool']), failed: error !== undefined, sections: [
      { label: 'Arguments', text: args === undefined ? '' : show(args), code: true },
      { label: 'Result', text: result === undefined ? '' : show(result), code: true },
      { label: 'Error', text: error === undefined ? '' : show(error), code: true },
    ] };
  }
  const nl = text.indexOf('\n');
  const first = (nl < 0 ? text : text.slice(0, nl)).replace(/^[#>*`\s]+|[`*\s]+$/g, '') || 'tool call';
  return { name: first, failed: false, sections: [{ label: 'Detail', text: nl < 0 ? '' : text.slice(nl + 1).trim(), code: false }] };
}
