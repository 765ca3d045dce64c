// @ts-check
// views/moderation/common.js: what the moderation views share: the reader's role in the open
// workspace, the reader's own standing (GET …/membership), time-left wording, and the one
// line that shows an answer or the API's refusal.
import { h } from '../../dom.js';
import * as api from '../../api.js';
import { state, touch, setWorkspaces } from '../../store.js';
import { loadChannels } from '../../actions.js';

// myRole is the reader's role in the open workspace, as the workspace listing says.
export function myRole() {
  const w = state.workspaces.find((x) => x.id === state.wsId);
  return (w && w.role) || '';
}

// The API decides who may; these only hide controls a role can never use.
export const isManager = () => ['owner', 'moderator'].includes(myRole());
export const isOwner = () => myRole() === 'owner';

// standing is the reader's own membership in the open workspace: role, timeout_until,
// blocked_at and, for a guest, post_limit and posts_remaining.
export const standing = { wsId: null, member: null };

export async function loadStanding() {
  const wsId = state.wsId;
  if (!wsId) return;
  const res = await api.get(`/api/workspaces/${wsId}/membership`);
  if (state.wsId !== wsId) return;
  const before = standing.wsId === wsId && standing.member ? standing.member.role : null;
  standing.wsId = wsId;
  standing.member = res.member;
  const role = res.member.role;
  if (before && before !== role) await rolesChanged();
  else if (role !== myRole()) setRole(wsId, role);
  touch('standing');
}

function setRole(wsId, role) {
  setWorkspaces(state.workspaces.map((w) => (w.id === wsId ? { ...w, role } : w)));
  touch('standing');
}

// rolesChanged reads the workspace list again (roles moved: a promotion, an ownership
// transfer) and the channel list, which a guest's promotion widens.
export async function rolesChanged() {
  const res = await api.get('/api/workspaces');
  setWorkspaces(res.workspaces || state.workspaces);
  await loadChannels();
  touch('sidebar', 'header', 'standing', 'moderation');
}

// timedOut says whether an RFC 3339 instant is still ahead.
export const running = (until) => !!until && new Date(until).getTime() > Date.now();

// timeLeft words the time until an instant: "45 s", "14 min", "2 h 5 min", "3 d 4 h".
export function timeLeft(until) {
  const s = Math.max(0, Math.round((new Date(until).getTime() - Date.now()) / 1000));
  if (s < 60) return `${s} s`;
  const m = Math.ceil(s / 60);
  if (m < 60) return `${m} min`;
  const hrs = Math.floor(m / 60);
  if (hrs < 24) return m % 60 ? `${hrs} h ${m % 60} min` : `${hrs} h`;
  const d = Math.floor(hrs / 24);
  return hrs % 24 ? `${d} d ${hrs % 24} h` : `${d} d`;
}

// outcome is a status line: said (an answer) or error (the API's sentence, as it gave it).
export function outcome(note) {
  return h('p', { class: note.error ? 'error mod-note' : 'muted mod-note', role: note.error ? 'alert' : 'status' }, note.error || note.said || '');
}

// describe is one line about a member's standing, as the directory and the banner say it.
export function describe(m) {
  const parts = [];
  if (m.blocked_at) parts.push('blocked');
  if (running(m.timeout_until)) parts.push(`timed out · ${timeLeft(m.timeout_until)} left`);
  if (m.role === 'guest' && typeof m.posts_remaining === 'number') parts.push(`${m.posts_remaining} of ${m.post_limit} posts left today`);
  return parts.join(' · ');
}
