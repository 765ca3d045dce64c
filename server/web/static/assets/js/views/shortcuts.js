// views/shortcuts.js: the keyboard shortcuts, in the side panel (`?`, or the personal menu).
import { h, replace } from '../dom.js';
import { registerPanel, registerMenuItem } from './registry.js';

const rows = [['Enter', 'Send'], ['Shift+Enter', 'New line'], ['↑', 'Edit your last message'], ['Ctrl/⌘+K', 'Jump to a channel or conversation'],
  ['Alt+↑ / Alt+↓', 'Previous / next channel'], ['Alt+Shift+↑ / ↓', 'Previous / next unread'], ['Esc', 'Close the panel, or mark the channel read'], ['?', 'This list']];

registerPanel('shortcuts', {
  title: 'Keyboard shortcuts',
  render(body, _panel, { fresh }) {
    if (fresh) replace(body, h('dl', { class: 'keys' }, ...rows.flatMap(([k, v]) => [h('dt', null, h('kbd', null, k)), h('dd', null, v)])));
  },
});

registerMenuItem('me', { label: 'Keyboard shortcuts', order: 80, panel: { kind: 'shortcuts' } });
