// @ts-check
// slash.js: the workspace's registered slash commands (an integration's, SPEC §Integrations).
// A message that starts with one of them goes to the slash hook instead of being posted: the
// integration's callback answers, and what it answers is posted as its bot. Anything else that
// starts with "/" (a bot's menu command) is posted as a message, for the bot to read.
import * as api from './api.js';
import { state } from './store.js';

let known = { wsId: null, commands: [] };

// loadSlash reads the registered commands of the open workspace; the command menu calls it
// each time it opens, so a command registered meanwhile is known by the time it is sent.
export async function loadSlash() {
  const wsId = state.wsId;
  const res = await api.get(`/api/workspaces/${wsId}/slash-commands`);
  // The list holds the active commands only.
  known = { wsId, commands: res.slash_commands || [] };
  return known.commands;
}

// slashOf names the registered command body starts with, and the text after it, or null.
export function slashOf(body) {
  const m = /^(\/[^\s/]+)(?:\s+([\s\S]*))?$/.exec(body.trim());
  if (!m || known.wsId !== state.wsId) return null;
  const command = m[1].toLowerCase();
  return known.commands.some((c) => c.command === command) ? { command, text: (m[2] || '').trim() } : null;
}

// invokeSlash sends the command to the channel's slash hook, form-encoded as the spec says.
export function invokeSlash(channelId, { command, text }) {
  return api.post(`/api/hooks/slash/${channelId}`, new URLSearchParams({ command, text }));
}
