// @ts-check
// views/bots/bots.js: the workspace's bots in the side panel. Each bot shows its tokens
// (redacted: name, scopes, when made and last used, revoked or not) with Revoke; a new token or
// setup code is shown once, with a Copy button, and is gone from the page when its box is
// closed. Who may do what is the API's to say (SPEC §Bots rule 6): a refusal shows its sentence.
import { h, replace, displayName } from '../../dom.js';
import { withPdot } from '../../lazy/presence.js';
import { state } from '../../store.js';
import * as api from '../../api.js';
import * as actions from '../../actions.js';
import { registerPanel } from '../registry.js';
import { manages } from './index.js';
import { field, select, checks, askFirst, secretBox, when, formValues, redraw, BUNDLES, SCOPES } from './ui.js';

// page is the panel's state between redraws; reveal holds a secret until its box is closed.
let page = fresh();
function fresh() { return { bots: null, error: '', said: '', reveal: null, open: '' }; }

const isOpen = () => state.panel && state.panel.kind === 'bots';

async function load() {
  page.bots = (await api.get(`/api/workspaces/${state.wsId}/bots`)).bots || [];
}

// act runs one change, then reads the list again and redraws, keeping the outcome.
async function act(body, said, fn) {
  page.error = '';
  page.said = '';
  try {
    await fn();
    page.said = said;
  } catch (e) {
    page.error = e.message;
  }
  try { await load(); } catch (e) { page.error = page.error || e.message; }
  if (isOpen()) draw(body);
}

function draw(body) {
  const error = h('p', { class: 'error pad', role: 'alert', hidden: !page.error }, page.error);
  const said = h('p', { class: 'muted pad', role: 'status', hidden: !page.said }, page.said);
  const reveal = page.reveal ? secretBox({ ...page.reveal, onClose: () => { page.reveal = null; draw(body); } }) : null;
  const list = page.bots === null ? h('p', { class: 'muted pad' }, 'Loading…')
    : page.bots.length ? h('ul', { class: 'bot-list', role: 'list' }, ...page.bots.map(({ bot, tokens }) => card(body, bot, tokens)))
      : h('p', { class: 'muted pad' }, 'No bots in this workspace yet.');
  // Forms keep what was typed across a refusal, and across the redraw the first load causes.
  redraw(body, !!page.error || page.loaded, () => replace(body, reveal, error, said, list, createForm(body)));
  page.loaded = false;
  if (reveal) reveal.querySelector('button').focus();
}

function createForm(body) {
  const form = h('form', { class: 'settings bot-create', 'aria-label': 'Create a bot',
    onsubmit: (e) => {
      e.preventDefault();
      const v = formValues(form);
      const req = { display_name: v.display_name, handle: v.handle, initial_token: false };
      if (v.owner === 'me') req.owner_user_id = state.me.id;
      act(body, `Created ${v.display_name}.`, () => api.post(`/api/workspaces/${state.wsId}/bots`, req));
    } },
  h('h3', null, 'New bot'),
  field('Display name', 'display_name', { required: true, placeholder: 'Deploy bot' }),
  field('Handle', 'handle', { placeholder: 'deployer' }),
  h('fieldset', { class: 'checks' }, h('legend', null, 'Kind'),
    h('label', { class: 'check' }, h('input', { type: 'radio', name: 'owner', value: 'service', checked: manages() }), h('span', null, 'Service bot (the workspace’s)')),
    h('label', { class: 'check' }, h('input', { type: 'radio', name: 'owner', value: 'me', checked: !manages() }), h('span', null, 'My own bot'))),
  h('div', { class: 'row-btns' }, h('button', { type: 'submit', class: 'btn primary' }, 'Create bot')));
  return form;
}

function card(body, bot, tokens) {
  const live = tokens.filter((t) => !t.revoked_at);
  return h('li', { class: 'bot-card', dataset: { bot: bot.id } },
    h('div', { class: 'bot-head' }, withPdot(bot),
      h('span', { class: 'who' }, h('span', { class: 'author' }, displayName(bot)), bot.handle ? h('span', { class: 'muted' }, ` @${bot.handle}`) : null),
      h('span', { class: 'tag bot' }, bot.owner_user_id ? 'user bot' : 'service bot')),
    tokens.length ? h('ul', { class: 'tokens', role: 'list', 'aria-label': `Tokens of ${displayName(bot)}` }, ...tokens.map((t) => tokenRow(body, t)))
      : h('p', { class: 'hint' }, 'No tokens.'),
    h('p', { class: 'hint' }, `${live.length} active ${live.length === 1 ? 'token' : 'tokens'}`),
    page.open === bot.id ? grantForm(body, bot)
      : h('div', { class: 'row-btns' },
        h('button', { type: 'button', class: 'btn small', onclick: () => { page.open = bot.id; draw(body); } }, 'New token or setup code'),
        // Deleting retires the bot for good (its old messages stay); SPEC §Bots rule 7 says who may.
        askFirst('Delete bot', () => act(body, `Deleted ${displayName(bot)}.`, () => api.del(`/api/bots/${bot.id}`)))));
}

function tokenRow(body, t) {
  const status = t.revoked_at ? `revoked ${when(t.revoked_at)}` : `created ${when(t.created_at)} · ${t.last_used_at ? `last used ${when(t.last_used_at)}` : 'never used'}`;
  return h('li', { class: `token${t.revoked_at ? ' revoked' : ''}`, dataset: { token: t.id } },
    h('div', { class: 'token-main' }, h('strong', { class: 'token-name' }, t.name), h('span', { class: 'hint' }, status),
      h('span', { class: 'token-scopes' }, (t.scopes || []).join(' '))),
    t.revoked_at ? null : askFirst('Revoke', () => act(body, `Revoked ${t.name}.`, () => api.post(`/api/bot-tokens/${t.id}/revoke`))));
}

// grantForm makes a token or a setup code for bot, with a name and the scopes chosen.
function grantForm(body, bot) {
  const base = `/api/workspaces/${state.wsId}/bots/${bot.id}`;
  const form = h('form', { class: 'settings grant', 'aria-label': `New token for ${displayName(bot)}`,
    onsubmit: (e) => {
      e.preventDefault();
      const v = formValues(form);
      const scopes = v.scopes || [];
      if (e.submitter && e.submitter.value === 'code') {
        act(body, 'Setup code created.', async () => {
          // defaultTo is where the runtime posts unless told otherwise (SPEC §Bots rule 3).
          const defaults = v.default_to ? { defaultTo: v.default_to } : undefined;
          const res = await api.post(`${base}/setup-codes`, { name: v.name || undefined, scopes, defaults });
          page.reveal = setupReveal(bot, res);
          page.open = '';
        });
        return;
      }
      act(body, `Token ${v.name} created.`, async () => {
        const t = (await api.post(`${base}/tokens`, { name: v.name, scopes })).bot_token;
        page.reveal = { title: `Token “${t.name}” for ${displayName(bot)}`, value: t.token,
          lines: [h('p', { class: 'hint token-granted' }, `Scopes: ${(t.scopes || []).join(', ')}`)] };
        page.open = '';
      });
    } },
  field('Token name', 'name', { placeholder: 'production', required: true }),
  checks('Bundles', 'scopes', BUNDLES, ['bot:write']),
  checks('Scopes', 'scopes', SCOPES),
  select('Setup code: post by default to', 'default_to', [['', 'the workspace’s default channel'],
    ...[...state.channels.values()].filter((c) => !c.archived).map((c) => [`channel:${c.name}`, `#${c.name}`])]),
  h('div', { class: 'row-btns' },
    h('button', { type: 'submit', class: 'btn primary', value: 'token' }, 'Create token'),
    h('button', { type: 'submit', class: 'btn', value: 'code' }, 'Create setup code'),
    h('button', { type: 'button', class: 'btn', onclick: () => { page.open = ''; draw(body); } }, 'Cancel')));
  return form;
}

// setupReveal shows a setup code, when it expires, and what a runtime does with it: one POST
// of the code to claim_url, exactly as given (SPEC §Bots rule 4), answers with its token.
function setupReveal(bot, res) {
  const c = res.setup_code || {};
  const claim = c.claim_url || res.claim_url || `${location.origin}/api/bot-setup-codes/claim`;
  const minutes = Math.max(0, Math.round((Date.parse(c.expires_at) - Date.now()) / 60000));
  return { title: `Setup code for ${displayName(bot)}`, value: c.code, lines: [
    h('p', { class: 'hint setup-expiry' }, h('time', { dateTime: c.expires_at }, `Expires ${when(c.expires_at)}`), ` (in ${minutes} minutes); it works once.`),
    h('p', { class: 'hint' }, 'Give it to the bot’s runtime: it claims the code once at this address and receives its own token.'),
    h('pre', { class: 'tool-code setup-claim' }, `curl -X POST ${claim} \\\n  -H 'Content-Type: application/json' \\\n  -d '{"code": "${c.code}"}'`)] };
}

registerPanel('bots', {
  title: 'Bots',
  render(body, panel, { fresh: isFresh }) {
    if (!isFresh) return;
    page = fresh();
    draw(body);
    load().catch((e) => { page.error = e.message; page.bots = []; }).then(() => { if (isOpen()) { page.loaded = true; draw(body); } });
  },
});
