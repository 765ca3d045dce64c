// @ts-check
// views/channel.js: a channel's settings in the side panel: name, display title, sidebar section,
// archive and unarchive. The API decides who may (the workspace owner); a refusal is shown
// with the API's own sentence, and nothing changes.
import { h, replace } from '../dom.js';
import { state } from '../store.js';
import * as actions from '../actions.js';
import { registerPanel } from './registry.js';

// note is the outcome of the last change, kept across the re-render its own event causes.
let note = { channelId: null, said: '', error: '' };

// drawn is what the panel shows now, so an event that changes nothing shown redraws nothing.
let drawn = { body: null, key: '' };

function renderChannelSettings(body, channelId, fresh = false) {
  const c = state.channels.get(channelId);
  if (!c) { replace(body, h('p', { class: 'muted pad' }, 'This channel is gone.')); drawn = { body, key: '' }; return; }
  if (note.channelId !== channelId) note = { channelId, said: '', error: '' };
  const key = JSON.stringify([channelId, c.name, c.display_title, c.sidebar_section, c.archived, c.external_managed, c.external_url, note]);
  if (!fresh && drawn.body === body && drawn.key === key && body.querySelector('form.settings')) return;
  // Fields the person has changed but not saved keep their text across a redraw.
  const typed = new Map();
  if (!fresh) for (const input of body.querySelectorAll('form.settings input')) if (input.value !== input.dataset.saved) typed.set(input.name, input.value);
  drawn = { body, key };
  const error = h('p', { class: 'error pad', role: 'alert', hidden: !note.error }, note.error);
  const done = h('p', { class: 'muted pad', role: 'status' }, note.said);
  const field = (label, name, value, placeholder) => h('label', { class: 'field' }, h('span', null, label),
    h('input', { type: 'text', name, value: typed.has(name) ? typed.get(name) : value || '', placeholder, 'aria-label': label, dataset: { saved: value || '' } }));
  const run = async (patch, said) => {
    note = { channelId, said: '', error: '' };
    error.hidden = true;
    done.textContent = '';
    try {
      await actions.updateChannel(channelId, patch);
      note.said = said;
    } catch (e) {
      note.error = e.message;
    }
    // The panel may have moved on while the call was out. The answer is drawn even when it reads
    // as the last one did: the error line was hidden when the call went out.
    drawn.key = '';
    if (state.panel && state.panel.kind === 'channel' && state.panel.channelId === channelId) renderChannelSettings(body, channelId);
  };
  const form = h('form', { class: 'settings', 'aria-label': 'Channel settings',
    onsubmit: (e) => {
      e.preventDefault();
      const f = new FormData(form);
      const patch = {};
      for (const k of ['name', 'display_title', 'sidebar_section']) if (String(f.get(k)).trim() !== String(c[k] || '')) patch[k] = String(f.get(k)).trim();
      if (!Object.keys(patch).length) { note.said = 'Nothing to change.'; drawn.key = ''; renderChannelSettings(body, channelId); return; }
      run(patch, 'Saved.');
    } },
  field('Name', 'name', c.name, 'channel-name'),
  // display_title is shown beside the name (the header, the sidebar's tooltip), never for it.
  field('Display title', 'display_title', c.display_title, 'Shown beside the name, e.g. Launch planning'),
  field('Sidebar section', 'sidebar_section', c.sidebar_section, 'Channels'),
  h('div', { class: 'row-btns' },
    h('button', { type: 'submit', class: 'btn primary' }, 'Save'),
    c.archived
      ? h('button', { type: 'button', class: 'btn archive', onclick: () => run({ archived: false }, 'Unarchived.') }, 'Unarchive')
      : h('button', { type: 'button', class: 'btn archive danger', onclick: () => run({ archived: true }, 'Archived.') }, 'Archive')));
  const link = c.external_managed && c.external_url && /^https?:\/\//i.test(c.external_url)
    ? h('p', { class: 'pad' }, 'Managed outside Natter: ', h('a', { href: c.external_url, target: '_blank', rel: 'noopener noreferrer' }, c.external_url)) : null;
  replace(body, link, form, error, done);
}

registerPanel('channel', {
  title: 'Channel settings',
  topics: ['channel'],
  render(body, panel, { fresh }) {
    renderChannelSettings(body, panel.channelId, fresh);
    // A dialog opened from the keyboard puts the keyboard in it.
    if (fresh) { const first = body.querySelector('input'); if (first) first.focus(); }
  },
});
