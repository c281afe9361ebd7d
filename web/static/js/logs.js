// Logs (installer role): plant or device log, newest first, paged with the
// API's cursor.
import { get } from './api.js';
import { h, clear, fmtUtc, problemBox } from './util.js';

const PAGE = 50;

export async function render(ctx, root) {
  const { plantId, tz } = ctx;
  const scope = h('select', { id: 'log-scope', 'aria-label': 'Log of' }, h('option', { value: '' }, 'Plant (all devices)'));
  const body = h('tbody');
  const more = h('button', { type: 'button', id: 'log-more', hidden: true }, 'Older entries');
  const status = h('div', { id: 'log-status' });
  const table = h('div', { class: 'scroll' }, h('table', { id: 'log-table' },
    h('thead', null, h('tr', null, ['Time (plant)', 'Level', 'Code', 'Device', 'Message'].map(t => h('th', { scope: 'col' }, t)))), body));
  root.append(h('h1', null, 'Logs'), h('section', { class: 'card' }, h('div', { class: 'toolbar' }, scope), status, table, more));
  let next = null;

  async function load(reset) {
    const dev = scope.value;
    const path = dev ? `/monitoring/v1/devices/${encodeURIComponent(dev)}/logs` : `/monitoring/v1/plants/${encodeURIComponent(plantId)}/logs`;
    try {
      const r = await get(path, { limit: PAGE, cursor: reset ? '' : next });
      if (!ctx.active()) return;
      if (reset) clear(body);
      clear(status);
      table.hidden = false;
      body.append(...r.logs.map(l => h('tr', { class: 'lv-' + l.level },
        h('td', { class: 'time' }, fmtUtc(l.time, tz)), h('td', { class: 'level' }, l.level), h('td', { class: 'code' }, l.code),
        h('td', { class: 'device' }, l.deviceId || dev || ''), h('td', { class: 'message' }, l.message))));
      if (reset && !r.logs.length) status.append(h('p', { class: 'muted' }, 'No log entries.'));
      next = r.next || null;
      more.hidden = !next;
    } catch (e) {
      if (!ctx.active()) return;
      table.hidden = more.hidden = true;
      clear(status, e.status === 403
        ? h('div', { class: 'problem', role: 'alert', id: 'log-refused' }, 'Logs need the installer role; the credential you signed in with has a lower role.')
        : problemBox(e));
    }
  }
  more.addEventListener('click', () => load(false));
  scope.addEventListener('change', () => load(true));
  try {
    const r = await get(`/monitoring/v1/plants/${encodeURIComponent(plantId)}/devices`);
    scope.append(...r.devices.map(d => h('option', { value: d.deviceId }, d.name)));
  } catch { /* the plant log still works */ }
  await load(true);
}
