// @ts-check
// views/moderation/index.js registers the moderation views (issue 16): invites and joining
// with one, and the reader's own standing above the composer, at once; the directory with
// roles, timeouts, blocks, notes and ownership transfer, the guests' waiting room and the
// archived channels are fetched the first time one opens.
import { state, on, touch } from '../../store.js';
import { registerLazyPanel, registerMenuItem } from '../registry.js';
import { isManager, myRole } from './common.js';
import './invites.js';
import './standing.js';

registerLazyPanel('moderation', 'Members and moderation', () => import('./directory.js'));
registerLazyPanel('guests', 'Guests waiting', () => import('./guests.js'));
registerLazyPanel('archived', 'Archived channels', () => import('./archived.js'));
registerMenuItem('workspace', { label: 'Members and moderation', order: 20, visible: isManager, panel: { kind: 'moderation' } });
registerMenuItem('workspace', { label: 'Guests waiting', order: 21, visible: isManager, panel: { kind: 'guests' } });
registerMenuItem('workspace', { label: 'Show archived channels', order: 30, visible: () => myRole() !== 'guest', panel: { kind: 'archived' } });

const directoryChanged = () => { if (state.panel && state.panel.kind === 'moderation') touch('moderation'); };

// Other moderators' changes and people leaving show in the open views at once.
for (const type of ['member.moderation_updated', 'member.removed', 'workspace.ownership_transferred']) {
  on(type, () => { directoryChanged(); return ['guests']; });
}
