// views/moderation/index.js loads the moderation views (issue 16): the directory with roles,
// timeouts, blocks, notes and ownership transfer; the guests' waiting room; invites and
// joining with one; archived channels; and the reader's own standing above the composer.
import { onEvent, touch } from '../../store.js';
import { directoryChanged } from './directory.js';
import './guests.js';
import './invites.js';
import './archived.js';
import './standing.js';

// Other moderators' changes and people leaving show in the open views at once.
onEvent((ev) => {
  if (ev.type === 'member.moderation_updated' || ev.type === 'member.removed' || ev.type === 'workspace.ownership_transferred') {
    directoryChanged();
    touch('guests');
  }
});
