// @ts-check
// views/shortcuts.js: the keyboard shortcuts, in the side panel (`?`, or the personal menu).
import { h, replace } from '../dom.js';
import { registerPanel } from './registry.js';

// Each row is tested in browser_a11y_test.go: keep them true.
const rows = [['Enter', 'Send'], ['Shift+Enter', 'New line'], ['↑', 'Edit your last message (in an empty composer)'],
  ['Ctrl/⌘+K', 'Jump to a channel, conversation or person'], ['Alt+↑ / Alt+↓', 'Previous / next channel'],
  ['Alt+Shift+↑ / ↓', 'Previous / next unread'], ['Esc', 'Close the panel, or mark the channel read'],
  ['Tab / Shift+Tab', 'The messages are one stop: the one last focused, or the newest'], ['↑ / ↓', 'On a message: previous / next message'], ['Home / End', 'On a message: first / last'],
  ['Enter or R', 'On a message: open its thread'], ['E', 'On your message: edit it'], ['Esc', 'On a message: back to the composer'], ['?', 'This list']];

registerPanel('shortcuts', {
  title: 'Keyboard shortcuts',
  render(body, _panel, { fresh }) {
    if (fresh) replace(body, h('dl', { class: 'keys' }, ...rows.flatMap(([k, v]) => [h('dt', null, h('kbd', null, k)), h('dd', null, v)])));
  },
});
