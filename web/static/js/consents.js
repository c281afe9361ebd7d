// Consents (installer role): the OAuth2 clients' consent requests
// (authorization-code and back-channel), pending first, each pending one
// approved or rejected here as with `plantd consent`.
import { get, post } from './api.js';
import { h, clear, fmtUtc, problemBox } from './util.js';

const REFRESH_MS = 5000;

function badge(s) { return h('span', { class: 'badge s-' + s }, s); }

export async function render(ctx, root) {
  const { tz } = ctx;
  const body = h('tbody');
  const status = h('div', { id: 'consent-status' });
  const result = h('div', { id: 'consent-result', role: 'status' });
  const table = h('div', { class: 'scroll' }, h('table', { id: 'consent-table' },
    h('thead', null, h('tr', null, ['Client', 'Kind', 'For', 'Scope', 'Requested (plant)', 'Status', 'Decision'].map(t => h('th', { scope: 'col' }, t)))), body));
  root.append(h('h1', null, 'Consents'), h('section', { class: 'card' },
    h('p', { class: 'muted' }, 'Applications that asked for access to this gateway with OAuth2. Approving one grants it its configured role.'),
    status, result, table));
  let timer, stopped = false;

  async function decide(c, accept) {
    try {
      const r = await post(`/gateway/v1/consents/${encodeURIComponent(c.id)}/${accept ? 'approve' : 'reject'}`);
      clear(result, h('p', { id: 'consent-decided', 'data-consent': r.id, 'data-state': r.state }, `${r.clientId}: ${r.state}.`));
    } catch (e) {
      clear(result, problemBox(e));
    }
    await load();
  }

  async function load() {
    try {
      const r = await get('/gateway/v1/consents');
      if (stopped || !ctx.active()) return;
      clear(status);
      table.hidden = false;
      const cell = (label, attrs, ...content) => h('td', { 'data-label': label, ...attrs }, ...content);
      clear(body, r.consents.map(c => h('tr', { 'data-consent': c.id, 'data-state': c.state },
        cell('Client', null, c.clientId), cell('Kind', null, c.kind), cell('For', null, c.loginHint || c.redirectUri || ''),
        cell('Scope', null, c.scope), cell('Requested', { class: 'time' }, fmtUtc(c.requestedAt, tz)),
        cell('Status', null, h('span', null, badge(c.state), c.state === 'Pending' ? ` until ${fmtUtc(c.expiresAt, tz).slice(11)}` : '')),
        cell('Decision', null, c.state === 'Pending'
          ? h('span', { class: 'decide' }, h('button', { type: 'button', class: 'approve', onclick: () => decide(c, true) }, 'Approve'), ' ',
            h('button', { type: 'button', class: 'reject', onclick: () => decide(c, false) }, 'Reject'))
          : fmtUtc(c.decidedAt, tz)))));
      if (!r.consents.length) status.append(h('p', { class: 'muted', id: 'consent-none' }, 'No consent requests.'));
    } catch (e) {
      if (stopped || !ctx.active()) return;
      table.hidden = true;
      clear(status, e.status === 403
        ? h('div', { class: 'problem', role: 'alert', id: 'consent-refused' }, 'Consents are refused to the credential you signed in with: ' + (e.problem?.detail || e.message || 'forbidden') +
          ' (deciding consents needs the installer role, signed in with a token or an interactive login, never an OAuth2 client\'s own grant).')
        : problemBox(e));
    }
  }
  async function tick() {
    await load();
    if (!stopped) timer = setTimeout(tick, REFRESH_MS);
  }
  await tick();
  return () => { stopped = true; clearTimeout(timer); };
}
