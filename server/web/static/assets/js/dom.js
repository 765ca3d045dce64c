// @ts-check
// dom.js builds elements. Strings become text nodes, never markup: nothing a person wrote can
// reach the HTML parser through here.

// h makes an element: attrs holds properties (class, dataset, aria-*, on* listeners).
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  if (attrs) {
    for (const [k, v] of Object.entries(attrs)) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'class') el.className = v;
      else if (k === 'dataset') Object.assign(el.dataset, v);
      else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
      else if (k === 'text') el.textContent = v;
      else if (k in el && !k.includes('-') && k !== 'list' && k !== 'form') el[k] = v;
      else el.setAttribute(k, v === true ? '' : String(v));
    }
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else if (c instanceof Node) el.appendChild(c);
    else el.appendChild(document.createTextNode(String(c)));
  }
}

// replace swaps el's children for the given ones.
export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

// icon is a small inline SVG from a path list, drawn with currentColor.
const svgNS = 'http://www.w3.org/2000/svg';
const paths = {
  hash: 'M5 9h14M5 15h14M10 4 8 20M16 4l-2 16',
  lock: 'M6 11h12v10H6zM8 11V7a4 4 0 0 1 8 0v4',
  pin: 'M9 4h6l-1 6 4 4H6l4-4zM12 14v6',
  search: 'M11 18a7 7 0 1 1 0-14 7 7 0 0 1 0 14zM21 21l-5-5',
  people: 'M9 11a4 4 0 1 0 0-8 4 4 0 0 0 0 8zM2 21v-1a6 6 0 0 1 12 0v1M16 3.5a4 4 0 0 1 0 7.5M22 21v-1a6 6 0 0 0-4-5.6',
  smile: 'M12 21a9 9 0 1 0 0-18 9 9 0 0 0 0 18zM8 14s1.5 2 4 2 4-2 4-2M9 9h.01M15 9h.01',
  thread: 'M21 12a8 8 0 0 1-12 7l-5 1 1-4a8 8 0 1 1 16-4z',
  quote: 'M7 7h4v6H6l2 4M15 7h4v6h-5l2 4',
  edit: 'M4 20h4L19 9l-4-4L4 16zM13 7l4 4',
  trash: 'M4 7h16M10 11v6M14 11v6M6 7l1 13h10l1-13M9 7V4h6v3',
  close: 'M6 6l12 12M18 6 6 18',
  plus: 'M12 5v14M5 12h14',
  clip: 'M21 11l-9 9a5 5 0 0 1-7-7l9-9a3.5 3.5 0 0 1 5 5l-9 9a2 2 0 0 1-3-3l8-8',
  send: 'M4 12l16-8-6 16-2-7z',
  out: 'M15 4h4v16h-4M10 8l-4 4 4 4M6 12h10',
  chevron: 'M6 9l6 6 6-6',
  more: 'M5 12h.01M12 12h.01M19 12h.01',
  menu: 'M4 6h16M4 12h16M4 18h16',
  at: 'M16 12a4 4 0 1 1-8 0 4 4 0 0 1 8 0zM16 12v1.5a2.5 2.5 0 0 0 5 0V12a9 9 0 1 0-3.5 7.1',
  star: 'M12 3l3 6 6 1-4.5 4 1 6-5.5-3-5.5 3 1-6L3 10l6-1z',
  gear: 'M12 15a3 3 0 1 0 0-6 3 3 0 0 0 0 6zM12 2v3M12 19v3M2 12h3M19 12h3M4.9 4.9l2.1 2.1M17 17l2.1 2.1M4.9 19.1 7 17M17 7l2.1-2.1',
};
export function icon(name) {
  const svg = document.createElementNS(svgNS, 'svg');
  svg.setAttribute('viewBox', '0 0 24 24');
  svg.setAttribute('class', 'icon');
  svg.setAttribute('aria-hidden', 'true');
  const p = document.createElementNS(svgNS, 'path');
  p.setAttribute('d', paths[name] || '');
  svg.appendChild(p);
  return svg;
}

// remoteAvatars says the operator lets the page load avatars from other hosts (the server's
// remote_avatars setting); off, an avatar_url elsewhere (Gravatar, GitHub) is never fetched, as
// the fetch would tell that host who is looking at whom, and the CSP would block it anyway.
let remoteAvatars = false;
export function setRemoteAvatars(on) { remoteAvatars = !!on; }

function loadableAvatar(url) {
  if (!url || failedAvatars.has(url)) return false;
  if (url.startsWith('/') && !url.startsWith('//')) return true;
  try {
    const u = new URL(url);
    if (u.origin === location.origin) return true;
    return remoteAvatars && /^https?:$/.test(u.protocol);
  } catch { return false; }
}

// avatar shows a person's picture, or their initial on a colour derived from their id.
export function avatar(user, size = 'md') {
  const name = (user && (user.display_name || user.handle)) || '?';
  const initial = () => {
    let hash = 0;
    for (const ch of (user && user.id) || name) hash = (hash * 31 + ch.charCodeAt(0)) >>> 0;
    return h('span', { class: `avatar ${size} hue${hash % 8}`, 'aria-hidden': 'true' }, [...name][0].toUpperCase());
  };
  const url = user && user.avatar_url;
  if (loadableAvatar(url)) {
    const img = h('img', { class: `avatar ${size}`, src: url, alt: '', loading: 'lazy', referrerPolicy: 'no-referrer' });
    // An unreachable avatar (offline, blocked) falls back to the initial, and is not tried again.
    img.addEventListener('error', () => { failedAvatars.add(url); img.replaceWith(initial()); }, { once: true });
    return img;
  }
  return initial();
}
const failedAvatars = new Set();

// pdot: people's presence dot (a group's: any online), coloured by lazy/presence.js's sheet.
let seen = null;
export function pdot(ids, group = false) {
  (seen ||= import('./lazy/presence.js')).then((m) => m.load()).catch(() => { seen = null; });
  return h('span', { class: `pdot${group ? ' group' : ''} ${ids.map((id) => `who-${id}`).join(' ')}` });
}

// displayName is what a person is called in the interface.
export function displayName(user) {
  if (!user) return 'Someone';
  return user.display_name || user.handle || user.former_handle || 'Someone';
}

// The formatters are made on first use: the first one a page makes loads the locale's data,
// tens of milliseconds (over 200 on a busy machine) that would otherwise delay every module's
// start. main.js makes them while the workspace's first calls are out (fmt.warm).
const formats = { day: { weekday: 'long', month: 'long', day: 'numeric' }, time: { hour: 'numeric', minute: '2-digit' },
  full: { dateStyle: 'full', timeStyle: 'medium' } };
const made = {};
const format = (kind) => made[kind] || (made[kind] = new Intl.DateTimeFormat(undefined, formats[kind]));
// byName orders names as localeCompare does, with one collator made on first use: the first
// collation of a page loads the locale's collation data (16-38 ms here, more under load), which
// boot.js does while the modules load, not on the way to the first paint.
let collator = null;
export const byName = (a, b) => (collator ||= new Intl.Collator()).compare(a, b);
export const fmt = {
  day: (d) => format('day').format(d),
  time: (d) => format('time').format(d),
  full: (d) => format('full').format(d),
  warm: () => { for (const kind of Object.keys(formats)) format(kind); },
};
