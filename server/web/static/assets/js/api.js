// @ts-check
// api.js is the one place the client calls the API: JSON in and out, the session cookie, and
// the CSRF header on every unsafe call (boot.js only starts the first view's GETs early).
import { takeEarly, q } from './boot.js';

// ApiError is an answer the server gave: status, machine code and a sentence for a person.
export class ApiError extends Error {
  constructor(status, code, message) {
    super(message || `request failed (${status})`);
    this.status = status;
    this.code = code || 'unknown';
  }
}

// NetworkError is no answer at all: the request may or may not have reached the server, so only
// idempotent calls (or calls carrying a nonce) may be retried.
export class NetworkError extends Error {}

let onUnauthenticated = () => {};
// setUnauthenticatedHandler is called when a call answers 401 (the session ended).
export function setUnauthenticatedHandler(fn) { onUnauthenticated = fn; }

const unsafe = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

export function headers(method) {
  const h = { Accept: 'application/json' };
  if (unsafe.has(method)) h['X-Natter-CSRF'] = '1';
  return h;
}

// call sends one request; body is sent as JSON unless it is FormData or form fields
// (URLSearchParams, sent form-encoded).
export async function call(method, path, body, { quiet401 = false } = {}) {
  const init = { method, headers: headers(method) }; // credentials: same-origin, fetch's default
  if (body !== undefined) {
    if (body instanceof FormData || body instanceof URLSearchParams) init.body = body;
    else { init.body = JSON.stringify(body); init.headers['Content-Type'] = 'application/json'; }
  }
  let res;
  try {
    res = await fetch(path, init);
  } catch (e) {
    throw new NetworkError(e.message || 'network error');
  }
  return answer(res, quiet401);
}

// answer reads a response: its JSON, or the ApiError it carries.
async function answer(res, quiet401) {
  let data = null;
  const text = await res.text().catch(() => '');
  if (text) { try { data = JSON.parse(text); } catch { data = null; } }
  if (!res.ok) {
    if (res.status === 401 && !quiet401) onUnauthenticated();
    throw new ApiError(res.status, data && data.code, data && data.error);
  }
  return data || {};
}

// get takes the answer of a GET boot.js started early for the same path, when there is one
// (asked again if it never arrived), else sends it now.
export function get(path, opts = {}) {
  const early = takeEarly(path);
  if (early) return early.then((res) => answer(res, opts.quiet401), () => call('GET', path, undefined, opts));
  return call('GET', path, undefined, opts);
}
export const post = (path, body, opts) => call('POST', path, body === undefined ? {} : body, opts);
export const patch = (path, body) => call('PATCH', path, body);
export const del = (path) => call('DELETE', path);

// q builds a query string from the defined values of params (boot.js's, the early reads' too).
export { q };

// upload sends one file with progress (fetch cannot report upload progress); nonce makes a
// retry return the original upload instead of a second one.
export function upload(workspaceId, file, nonce, onProgress) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('POST', `/api/uploads${q({ workspace_id: workspaceId, nonce })}`);
    for (const [k, v] of Object.entries(headers('POST'))) xhr.setRequestHeader(k, v);
    xhr.upload.onprogress = (e) => { if (e.lengthComputable) onProgress(e.loaded / e.total); };
    xhr.onload = () => {
      let data = null;
      try { data = JSON.parse(xhr.responseText); } catch { data = null; }
      if (xhr.status >= 200 && xhr.status < 300 && data) resolve(data.upload || data);
      else reject(new ApiError(xhr.status, data && data.code, data && data.error));
    };
    xhr.onerror = () => reject(new NetworkError('upload failed: network error'));
    const fd = new FormData();
    fd.append('file', file, file.name || 'pasted-image.png');
    xhr.send(fd);
  });
}

// nonce is a fresh idempotency key.
export function nonce() {
  return (crypto.randomUUID ? crypto.randomUUID() : `${Date.now()}-${Math.random().toString(36).slice(2)}`);
}
