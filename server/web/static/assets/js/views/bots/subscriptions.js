// @ts-check
// views/bots/subscriptions.js: event subscriptions in the integrations panel, each with its
// delivery attempts (newest first: when, which event, the attempt, the HTTP status and what it
// means), Rotate secret and Revoke.
import { h } from '../../dom.js';
import { state } from '../../store.js';
import * as api from '../../api.js';
import { field, select, checks, askFirst, when, formValues } from './ui.js';

// outcome sorts an attempt's answer into what a person needs to know.
export function outcome(d) {
  const s = d.response_status || 0;
  if (!s) return { cls: 'failed', text: d.error ? `no answer: ${d.error}` : 'no answer' };
  if (s >= 200 && s < 300) return { cls: 'ok', text: `${s} delivered` };
  if (s >= 300 && s < 400) return { cls: 'failed', text: `${s} redirect, not followed` };
  if (s >= 400 && s < 500) return { cls: 'failed', text: `${s} refused by the receiver` };
  return { cls: 'failed', text: `${s} receiver failed` };
}

// loadDeliveries reads a subscription's attempts into page.deliveries: the newest page (the
// API's default size), or with older the page after those shown.
export async function loadDeliveries(page, subId, older = false) {
  const had = older ? page.deliveries.get(subId) : null;
  const res = await api.get(`/api/event-subscriptions/${subId}/deliveries${api.q({ before: had ? had.next : undefined })}`);
  page.deliveries.set(subId, { list: (had ? had.list : []).concat(res.deliveries || []), next: res.next_cursor || null });
}

export function subscriptionsSection(ctx) {
  const { page } = ctx;
  const form = h('form', { class: 'settings', 'aria-label': 'Subscribe to events',
    onsubmit: (e) => {
      e.preventDefault();
      const v = formValues(form);
      ctx.act('Subscribed.', async () => {
        const s = (await api.post(`/api/workspaces/${state.wsId}/event-subscriptions`,
          { app_installation_id: v.app_installation_id, event_types: v.event_types || [], callback_url: v.callback_url })).event_subscription;
        ctx.secret(`Signing secret of the subscription to ${s.callback_url}`, s.signing_secret);
      });
    } },
  select('App', 'app_installation_id', page.installs.map((i) => [i.id, i.display_name])),
  field('Callback URL', 'callback_url', { type: 'url', required: true, placeholder: 'https://example.com/natter/events' }),
  checks('Events', 'event_types', ['*', ...page.eventTypes], ['message.created']),
  h('div', { class: 'row-btns' }, h('button', { type: 'submit', class: 'btn primary', disabled: !page.installs.length }, 'Subscribe')));
  return h('section', { class: 'integration-section', 'aria-label': 'Event subscriptions' }, h('h3', null, 'Event subscriptions'),
    page.subs.length ? h('ul', { class: 'int-list subs', role: 'list' }, ...page.subs.map((s) => subscription(ctx, s)))
      : h('p', { class: 'hint pad' }, 'No event subscriptions.'),
    form);
}

function subscription(ctx, s) {
  const shown = ctx.page.deliveries.get(s.id);
  const toggle = () => {
    if (shown) { ctx.page.deliveries.delete(s.id); ctx.draw(); return; }
    ctx.look(() => loadDeliveries(ctx.page, s.id));
  };
  return h('li', { dataset: { id: s.id } },
    h('div', { class: 'int-main' }, h('strong', null, s.event_types.join(', ')),
      h('span', { class: 'hint' }, `${ctx.installName(s.app_installation_id)} · ${s.callback_url}`)),
    h('div', { class: 'row-btns' },
      h('button', { type: 'button', class: 'btn small', 'aria-expanded': shown ? 'true' : 'false', onclick: toggle }, shown ? 'Hide deliveries' : 'Deliveries'),
      shown ? h('button', { type: 'button', class: 'btn small', onclick: () => ctx.look(() => loadDeliveries(ctx.page, s.id)) }, 'Refresh') : null,
      h('button', { type: 'button', class: 'btn small', onclick: () => ctx.act('New signing secret.', async () => {
        const r = (await api.post(`/api/event-subscriptions/${s.id}/rotate-secret`)).event_subscription;
        ctx.secret(`New signing secret of the subscription to ${r.callback_url}`, r.signing_secret);
      }) }, 'Rotate secret'),
      askFirst('Revoke', () => ctx.act('Subscription revoked.', () => api.post(`/api/event-subscriptions/${s.id}/revoke`)))),
    shown ? deliveries(shown.list) : null,
    shown && shown.next ? h('button', { type: 'button', class: 'btn small', onclick: () => ctx.look(() => loadDeliveries(ctx.page, s.id, true)) }, 'Older attempts') : null);
}

function deliveries(list) {
  if (!list.length) return h('p', { class: 'hint deliveries-none' }, 'No delivery attempts yet.');
  return h('table', { class: 'deliveries' },
    h('thead', null, h('tr', null, ...['When', 'Event', 'Attempt', 'Outcome'].map((t) => h('th', { scope: 'col' }, t)))),
    h('tbody', null, ...list.map((d) => {
      const o = outcome(d);
      return h('tr', { class: `delivery ${o.cls}`, dataset: { id: d.id } },
        h('td', null, h('time', { dateTime: d.created_at }, when(d.created_at))), h('td', null, d.event_type),
        h('td', null, String(d.attempt)), h('td', { class: 'delivery-outcome' }, o.text));
    })));
}
