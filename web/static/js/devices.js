// Devices: every device of the plant with its identity, health,
// communication, latest values with units and SunSpec models.
import { get } from './api.js';
import { firstRunNotice } from './firstrun.js';
import { h, clear, fmtValue, fmtUtc, problemBox, relative } from './util.js';
import { fieldLabel, setLabel, KINDS, modelLabel } from './labels.js';

const REFRESH_MS = 5000;

// The states in words; the API's name stays the badge's class and title.
const HEALTH = { Ok: 'OK', Warning: 'Warning', Error: 'Error', Off: 'Off', NotAvailable: 'Not known' };
const COMM = { Ok: 'Answers', Partial: 'Answers in part', TimedOut: 'Timed out', Unreachable: 'Unreachable', NotAvailable: 'Not known' };
const healthWords = s => HEALTH[s] ?? s;
function badge(s, words = healthWords(s)) { return h('span', { class: 'badge s-' + s, title: s }, words); }

// bySet orders values by set, sets in the order they first appear.
function bySet(values) {
  const m = new Map();
  for (const v of values) { if (!m.has(v.setType)) m.set(v.setType, []); m.get(v.setType).push(v); }
  return [...m.values()].flat();
}

// valueRows lists the values grouped by the measurement set they feed,
// each in words (labels.js) with the API's name as its title.
function valueRows(values) {
  const rows = [];
  let set = null;
  for (const v of values) {
    if (v.setType !== set) {
      set = v.setType;
      rows.push(h('tr', { class: 'group', 'data-set': set }, h('th', { colspan: '2', scope: 'colgroup', title: set }, setLabel(set))));
    }
    const name = v.name + (v.index ? '.' + v.index : '');
    rows.push(h('tr', { 'data-name': name, 'data-value': v.value, 'data-unit': v.unit },
      h('td', { title: name }, fieldLabel(name)), h('td', { class: 'num' }, fmtValue(v.value, v.unit))));
  }
  return rows;
}

function card(d, tz, now, open) {
  const dev = d.device, c = d.communication || {};
  const values = d.values.length
    ? h('div', { class: 'scroll' }, h('table', { class: 'values' },
      h('thead', null, h('tr', null, h('th', { scope: 'col' }, 'Value'), h('th', { scope: 'col', class: 'num' }, 'Latest'))),
      h('tbody', null, valueRows(bySet(d.values)))))
    : h('p', { class: 'muted' }, 'No values yet.');
  return h('article', { class: 'card device', id: 'dev-' + dev.deviceId, 'data-device': dev.deviceId, 'data-health': d.healthStatus, 'data-comm': c.status },
    h('h2', null, dev.name, ' ', badge(d.healthStatus)),
    h('dl', { class: 'kv' },
      h('dt', null, 'Kind'), h('dd', { title: dev.type }, KINDS[dev.type] ?? dev.type),
      h('dt', null, 'Model'), h('dd', { class: 'model' }, modelLabel(dev.vendor, dev.product)),
      dev.serial ? [h('dt', null, 'Serial'), h('dd', null, dev.serial)] : null,
      h('dt', null, 'Health'), h('dd', null, healthWords(d.healthStatus) + (d.healthReason ? ` (${d.healthReason})` : '')),
      h('dt', null, 'Communication'), h('dd', null, badge(c.status || 'NotAvailable', COMM[c.status || 'NotAvailable']), ` ${Math.round((c.successRate || 0) * 100)} % of polls answered`),
      h('dt', null, 'Last contact'), h('dd', null, c.lastContactUtc ? `${fmtUtc(c.lastContactUtc, tz)} (${relative(Date.parse(c.lastContactUtc), now)})` : 'never'),
      c.lastError ? [h('dt', null, 'Last error'), h('dd', null, c.lastError)] : null,
      d.platform ? [h('dt', null, 'SunSpec'), h('dd', null, d.platform === 'der' ? 'IEEE 1547 (7xx)' : 'classic (1xx)')] : null,
      h('dt', null, 'SunSpec models'), h('dd', { class: 'models' }, d.sunspecModels.length ? d.sunspecModels.join(' ') : '–')),
    h('details', { class: 'values', open: open || undefined }, h('summary', null, `Latest values (${d.values.length})`), values));
}

// Values are open on wide screens; on a phone each device's list opens on
// demand, and stays as the reader left it across refreshes.
const opened = new Map();
function openValues(id) {
  if (!opened.has(id)) opened.set(id, window.matchMedia('(min-width: 700px)').matches);
  return opened.get(id);
}

export async function render(ctx, root) {
  const { plantId, tz } = ctx;
  const list = h('div', { class: 'cards', id: 'devices' });
  const status = h('p', { class: 'muted' });
  root.append(h('h1', null, 'Devices'), status, list);
  list.addEventListener('toggle', ev => {
    const card = ev.target.closest('[data-device]');
    if (card && ev.target.matches('details.values')) opened.set(card.dataset.device, ev.target.open);
  }, true);
  let timer, stopped = false;
  async function tick() {
    try {
      const r = await get(`/monitoring/v1/plants/${encodeURIComponent(plantId)}/devices`);
      const now = await ctx.plantNow();
      const details = await Promise.all(r.devices.map(d =>
        get(`/live/v1/devices/${encodeURIComponent(d.deviceId)}`).catch(e => ({ failed: e, device: d }))));
      if (stopped) return;
      const cards = details.map(d => d.failed
        ? h('article', { class: 'card' }, h('h2', null, d.device.name), problemBox(d.failed))
        : card(d, tz, now, openValues(d.device.deviceId)));
      const on = details.filter(d => d.communication?.status === 'Ok').length;
      status.textContent = `${details.length} devices, ${on} communicating; refreshed every ${REFRESH_MS / 1000} s`;
      clear(list, cards.length ? cards : firstRunNotice());
    } catch (e) {
      if (!stopped) clear(list, problemBox(e));
    }
    if (!stopped) timer = setTimeout(tick, REFRESH_MS);
  }
  await tick();
  return () => { stopped = true; clearTimeout(timer); };
}
