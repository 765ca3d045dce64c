// @ts-check
// views/bots/index.js registers the bots, agents and integrations views (issue 16): agents'
// durable messages in the list at once; the bots panel (tokens, setup codes) and the
// integrations panel (app installations, slash commands, event subscriptions and their
// deliveries) are fetched the first time one opens.
import * as actions from '../../actions.js';
import { state } from '../../store.js';
import { registerLazyPanel, registerMenuItem } from '../registry.js';
import './agentmsg.js';

// manages says whether the signed-in person is an owner or moderator of the open workspace:
// only they see the integrations. The API decides all the same.
export function manages() {
  const ws = state.workspaces.find((w) => w.id === state.wsId);
  return !!ws && (ws.role === 'owner' || ws.role === 'moderator');
}

registerLazyPanel('bots', 'Bots', () => import('./bots.js'));
registerLazyPanel('integrations', 'Integrations', () => import('./integrations.js'));

registerMenuItem('workspace', { label: 'Bots', order: 40,
  // A new object each time: choosing the entry again reads the lists again.
  run: () => actions.openPanel({ kind: 'bots' }),
  visible: () => { const ws = state.workspaces.find((w) => w.id === state.wsId); return !!ws && ws.role !== 'guest'; } });
registerMenuItem('workspace', { label: 'Integrations', order: 45,
  run: () => actions.openPanel({ kind: 'integrations' }), visible: manages });
