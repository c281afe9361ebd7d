// The page's only way to the gateway: plantd's public HTTP API, same
// origin, with the credential of this tab's session storage.

const KEY = 'plantd.auth';

export class ApiError extends Error {
  constructor(status, problem) {
    super((problem && (problem.detail || problem.message || problem.title)) || `HTTP ${status}`);
    this.status = status;
    this.problem = problem || {};
  }
}

export function credential() {
  try { return JSON.parse(sessionStorage.getItem(KEY)); } catch { return null; }
}

function store(c) { sessionStorage.setItem(KEY, JSON.stringify(c)); }

export function signOut() { sessionStorage.removeItem(KEY); }

async function problemOf(r) {
  try { return await r.json(); } catch { return { title: r.statusText }; }
}

// clientToken gets an access token for an OAuth2 client (client_credentials).
async function clientToken(clientId, secret) {
  const body = new URLSearchParams({ grant_type: 'client_credentials', client_id: clientId, client_secret: secret });
  const r = await fetch('/oauth2/token', { method: 'POST', body, credentials: 'omit' });
  if (!r.ok) throw new ApiError(r.status, await problemOf(r));
  const t = await r.json();
  return { token: t.access_token, expiresAt: Date.now() + (t.expires_in || 300) * 1000 };
}

// signIn checks a credential against the API and keeps it for this tab.
export async function signIn(c) {
  if (c.kind === 'client') Object.assign(c, await clientToken(c.clientId, c.secret));
  store(c);
  try {
    return await get('/monitoring/v1/plants');
  } catch (e) {
    signOut();
    throw e;
  }
}

async function bearer(renew) {
  const c = credential();
  if (!c) throw new ApiError(401, { detail: 'not signed in' });
  if (c.kind === 'client' && (renew || !c.token || Date.now() > c.expiresAt - 15000)) {
    Object.assign(c, await clientToken(c.clientId, c.secret));
    store(c);
  }
  return c.token;
}

async function call(method, path, params, body) {
  const url = new URL(path, location.origin);
  for (const [k, v] of Object.entries(params || {})) if (v !== undefined && v !== null && v !== '') url.searchParams.set(k, v);
  for (let attempt = 0; ; attempt++) {
    const headers = { Authorization: 'Bearer ' + await bearer(attempt > 0), Accept: 'application/json' };
    const init = { method, headers, credentials: 'omit', cache: 'no-cache' };
    if (body !== undefined) {
      headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    const r = await fetch(url, init);
    if (r.status === 401 && attempt === 0 && credential()?.kind === 'client') continue;
    if (!r.ok) {
      const e = new ApiError(r.status, await problemOf(r));
      if (r.status === 401) window.dispatchEvent(new CustomEvent('plantd:unauthorized', { detail: e }));
      throw e;
    }
    return r.status === 204 ? null : r.json();
  }
}

export const get = (path, params) => call('GET', path, params);
export const post = (path, body) => call('POST', path, undefined, body);
export const put = (path, body) => call('PUT', path, undefined, body);
export const del = path => call('DELETE', path);
