// @ts-check
// views/export.js: the owner's "Download export" entry in the workspace menu (issue 28). The
// browser downloads the archive straight from the API (the session cookie goes with a plain
// navigation), so nothing of it passes through this page's memory.
import { h } from '../dom.js';
import { state } from '../store.js';
import { registerMenuItem } from './registry.js';
import { isOwner } from './moderation/common.js';

registerMenuItem('workspace', { label: 'Download export', order: 80, visible: isOwner,
  run() {
    const a = h('a', { href: `/api/workspaces/${encodeURIComponent(state.wsId)}/export`, download: '', hidden: true });
    document.body.append(a);
    a.click();
    a.remove();
  } });
