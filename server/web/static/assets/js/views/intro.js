// views/intro.js: an empty place says where the reader is: "This is the start of #name" (or of
// the conversation), the display title, and for a channel "Invite people": the members panel
// of a private channel, the invites panel for owners and moderators, the directory otherwise.
import { h, replace } from '../dom.js';
import { state } from '../store.js';
import * as actions from '../actions.js';
import { dmName } from './sidebar.js';
import { isManager } from './moderation/common.js';

export function renderIntro(el, view) {
  const c = view.kind === 'channel' ? state.channels.get(view.id) : null;
  const key = JSON.stringify([view.id, c && [c.name, c.display_title, c.visibility], isManager()]);
  if (el.dataset.key === key) return;
  el.dataset.key = key;
  if (!c) {
    replace(el, h('h2', null, `This is the start of your conversation with ${dmName(state.dms.get(view.id) || {})}`));
    return;
  }
  const invite = c.visibility === 'private' ? { kind: 'channel-members', channelId: c.id } : isManager() ? { kind: 'invites' } : { kind: 'members' };
  replace(el, h('h2', null, `This is the start of ${c.visibility === 'private' ? '' : '#'}${c.name}`),
    c.display_title && c.display_title !== c.name ? h('p', { class: 'muted' }, c.display_title) : null,
    h('button', { class: 'btn small', type: 'button', onclick: () => actions.openPanel(invite) }, 'Invite people'));
}
