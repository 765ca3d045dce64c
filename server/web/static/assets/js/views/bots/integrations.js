// @ts-check
// views/bots/integrations.js: the workspace's integrations in the side panel, for its owners
// and moderators, who alone may change them (SPEC §Integrations rule 1; the menu entry is hidden
// from others, though the API lets every human member but a waiting-room guest list them and
// read delivery attempts): app installations, their slash commands and their event
// subscriptions (subscriptions.js). A signing secret is shown once, on create and on rotate.
import { h, replace, displayName } from '../../dom.js';
import { state } from '../../store.js';
import * as api from '../../api.js';
import * as actions from '../../actions.js';
import { registerPanel } from '../registry.js';
import { manages } from './index.js';
import { field, select, askFirst, secretBox, when, formValues, redraw } from './ui.js';
import { subscriptionsSection, loadDeliveries } from './subscriptions.js';

let page = fresh();
function fresh() { return { installs: null, commands: [], subs: [], bots: [], eventTypes: [], deliveries: new Map(), error: '', said: '', reveal: null }; }

const isOpen = () => state.panel && state.panel.kind === 'integrations';
const ws = (path) => `/api/workspaces/${state.wsId}/${path}`;

async function load() {
  const [i, c, s, b, t] = await Promise.all([api.get(ws('app-installations')), api.get(ws('slash-commands')),
    api.get(ws('event-subscriptions')), api.get(ws('bots')), api.get('/api/event-types')]);
  page.installs = i.app_installations || [];
  page.commands = c.slash_commands || [];
  page.subs = s.event_subscriptions || [];
  page.bots = (b.bots || []).map((x) => x.bot);
  page.eventTypes = t.event_types || [];
  // Open delivery lists are read again (their first page) with everything else.
  await Promise.all([...page.deliveries.keys()].map((id) => loadDeliveries(page, id)));
}

// act runs one change, reads everything again and redraws, keeping the outcome (said, or
// said(the change's answer)).
async function act(body, said, fn) {
  page.error = '';
  page.said = '';
  try {
    const out = await fn();
    page.said = typeof said === 'function' ? said(out) : said;
  } catch (e) {
    page.error = e.message;
  }
  try { await load(); } catch (e) { page.error = page.error || e.message; }
  if (isOpen()) draw(body);
}

// look runs a read that changes nothing (a page of delivery attempts) and redraws.
async function look(body, fn) {
  page.error = '';
  page.said = '';
  try { await fn(); } catch (e) { page.error = e.message; }
  if (isOpen()) draw(body);
}

// secret shows a signing secret the server just returned, once.
const secret = (title, value) => { page.reveal = { title, value }; };

const botName = (id) => { const b = page.bots.find((x) => x.id === id) || state.users.get(id); return b ? displayName(b) : id; };
const installName = (id) => (page.installs.find((i) => i.id === id) || {}).display_name || id;

function draw(body) {
  const ctx = { page, act: (said, fn) => act(body, said, fn), look: (fn) => look(body, fn), draw: () => draw(body), secret, installName };
  const reveal = page.reveal ? secretBox({ ...page.reveal, onClose: () => { page.reveal = null; draw(body); } }) : null;
  // Forms keep what was typed across a refusal, and across the redraw the first load causes.
  const keep = !!page.error || page.loaded;
  page.loaded = false;
  redraw(body, keep, () => replace(body, reveal,
    h('p', { class: 'error pad', role: 'alert', hidden: !page.error }, page.error),
    h('p', { class: 'muted pad', role: 'status', hidden: !page.said }, page.said),
    page.installs === null ? h('p', { class: 'muted pad' }, 'Loading…') : [
      installations(ctx), slashCommands(ctx), subscriptionsSection(ctx)]));
  if (reveal) reveal.querySelector('button').focus();
}

function installations(ctx) {
  const form = h('form', { class: 'settings', 'aria-label': 'Install an app',
    onsubmit: (e) => {
      e.preventDefault();
      const v = formValues(form);
      // An installation comes with its own bot token, shown this once like any other.
      ctx.act(`Installed ${v.display_name}.`, async () => {
        const res = await api.post(ws('app-installations'), { app_slug: v.app_slug, display_name: v.display_name, bot_user_id: v.bot_user_id, config: {} });
        const t = res.bot_token;
        if (t && t.token) {
          page.reveal = { title: `Bot token “${t.name}” of ${res.app_installation.display_name}, as ${botName(t.bot_user_id)}`, value: t.token,
            lines: [h('p', { class: 'hint token-granted' }, `Scopes: ${(t.scopes || []).join(', ')}`)] };
        }
      });
    } },
  field('App', 'app_slug', { required: true, placeholder: 'ci-notifier' }),
  field('Display name', 'display_name', { required: true, placeholder: 'CI notifier' }),
  select('Bot', 'bot_user_id', page.bots.map((b) => [b.id, displayName(b)])),
  h('div', { class: 'row-btns' }, h('button', { type: 'submit', class: 'btn primary', disabled: !page.bots.length }, 'Install')),
  page.bots.length ? null : h('p', { class: 'hint' }, 'An app acts as one of the workspace’s bots: create a bot first.'));
  return h('section', { class: 'integration-section', 'aria-label': 'App installations' }, h('h3', null, 'App installations'),
    page.installs.length ? h('ul', { class: 'int-list installs', role: 'list' }, ...page.installs.map((i) => h('li', { dataset: { id: i.id } },
      h('div', { class: 'int-main' }, h('strong', null, i.display_name), h('span', { class: 'hint' }, `${i.app_slug} · as ${botName(i.bot_user_id)} · ${when(i.created_at)}`)),
      revokeInstall(ctx, i))))
      : h('p', { class: 'hint pad' }, 'No apps installed.'),
    form);
}

// revokeInstall is an installation's Revoke, with the API's two opt-in extras, and says what it
// ended, in the API's exact counts.
function revokeInstall(ctx, i) {
  const opt = (name, label) => h('label', { class: 'check' }, h('input', { type: 'checkbox', name }), h('span', null, label));
  const tokens = opt('revoke_bot_tokens', 'also revoke its bot’s tokens');
  const bot = opt('delete_bot', 'also delete its bot');
  const n = (k, one, many) => `${k} ${k === 1 ? one : many}`;
  return h('div', { class: 'revoke-install' }, tokens, bot, askFirst('Revoke', () => ctx.act(
    (res) => `Revoked ${i.display_name}: ${n(res.revoked.slash_commands, 'slash command', 'slash commands')}, ${n(res.revoked.event_subscriptions, 'event subscription', 'event subscriptions')}, ${n(res.revoked.bot_tokens, 'bot token', 'bot tokens')}${res.deleted_bot ? `; ${res.deleted_bot.display_name} deleted` : ''}.`,
    () => api.post(`/api/app-installations/${i.id}/revoke`, {
      revoke_bot_tokens: tokens.querySelector('input').checked, delete_bot: bot.querySelector('input').checked }))));
}

function slashCommands(ctx) {
  const form = h('form', { class: 'settings', 'aria-label': 'Register a slash command',
    onsubmit: (e) => {
      e.preventDefault();
      const v = formValues(form);
      const inst = page.installs.find((i) => i.id === v.app_installation_id);
      ctx.act(`Registered ${v.command}.`, async () => {
        const c = (await api.post(ws('slash-commands'), { app_installation_id: v.app_installation_id, command: v.command,
          description: v.description, callback_url: v.callback_url, bot_user_id: inst ? inst.bot_user_id : '' })).slash_command;
        secret(`Signing secret of ${c.command}`, c.signing_secret);
      });
    } },
  select('App', 'app_installation_id', page.installs.map((i) => [i.id, i.display_name])),
  field('Command', 'command', { required: true, placeholder: '/deploy' }),
  field('Description', 'description', { required: true, placeholder: 'Deploy a branch' }),
  field('Callback URL', 'callback_url', { type: 'url', required: true, placeholder: 'https://example.com/natter/slash' }),
  h('div', { class: 'row-btns' }, h('button', { type: 'submit', class: 'btn primary', disabled: !page.installs.length }, 'Register command')));
  return h('section', { class: 'integration-section', 'aria-label': 'Slash commands' }, h('h3', null, 'Slash commands'),
    page.commands.length ? h('ul', { class: 'int-list commands', role: 'list' }, ...page.commands.map((c) => h('li', { dataset: { id: c.id } },
      h('div', { class: 'int-main' }, h('code', null, c.command), h('span', null, ` ${c.description}`),
        h('span', { class: 'hint' }, `${installName(c.app_installation_id)} · ${c.callback_url}`)),
      h('div', { class: 'row-btns' },
        h('button', { type: 'button', class: 'btn small', onclick: () => ctx.act(`New secret for ${c.command}.`, async () => {
          const r = (await api.post(`/api/slash-commands/${c.id}/rotate-secret`)).slash_command;
          secret(`New signing secret of ${r.command}`, r.signing_secret);
        }) }, 'Rotate secret'),
        askFirst('Revoke', () => ctx.act(`Revoked ${c.command}.`, () => api.post(`/api/slash-commands/${c.id}/revoke`)))))))
      : h('p', { class: 'hint pad' }, 'No slash commands.'),
    form);
}

registerPanel('integrations', {
  title: 'Integrations',
  render(body, panel, { fresh: isFresh }) {
    if (!isFresh) return;
    page = fresh();
    draw(body);
    load().catch((e) => { page.error = e.message; page.installs = page.installs || []; }).then(() => { if (isOpen()) { page.loaded = true; draw(body); } });
  },
});
