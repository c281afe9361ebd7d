// Overview: the live energy balance as a power flow, refreshed every 2 s,
// and today's energy with autarky and self-consumption.
import { get } from './api.js';
import { addFirstRunNotice } from './firstrun.js';
import { listConsumers, consumersNow } from './consumers.js';
import { renderPrices } from './prices.js';
import { h, clear, fmtW, fmtWh, fmtRate, problemBox, localDate, localToMs, localDateTime } from './util.js';

const LIVE_MS = 2000, TODAY_MS = 30000;

const liveFields = [
  ['pvGeneration', 'PV generation', fmtW], ['totalConsumption', 'Consumption', fmtW],
  ['gridConsumption', 'Grid purchase', fmtW], ['gridFeedIn', 'Grid feed-in', fmtW],
  ['batteryCharging', 'Battery charging', fmtW], ['batteryDischarging', 'Battery discharging', fmtW],
  ['batteryStateOfCharge', 'Battery state of charge', v => v === undefined ? '–' : Math.round(v) + ' %'],
  ['autarkyRate', 'Autarky now', fmtRate], ['selfConsumptionRate', 'Self-consumption now', fmtRate],
];
const todayFields = [
  ['pvGeneration', 'PV generation', fmtWh], ['totalConsumption', 'Consumption', fmtWh],
  ['gridConsumption', 'Grid purchase', fmtWh], ['gridFeedIn', 'Grid feed-in', fmtWh],
  ['batteryCharging', 'Battery charged', fmtWh], ['batteryDischarging', 'Battery discharged', fmtWh],
  ['autarkyRate', 'Autarky', fmtRate], ['selfConsumptionRate', 'Self-consumption', fmtRate],
];

function kpi(field, label, value, fmt) {
  return h('div', { class: 'kpi', 'data-field': field, 'data-value': value ?? '' },
    h('div', { class: 'label' }, label), h('div', { class: 'value' }, fmt(value)));
}

function node(cls, label, field, value, dir, sub) {
  return h('div', { class: 'node ' + cls, 'data-field': field, 'data-value': value ?? '' },
    h('div', { class: 'label' }, label), h('div', { class: 'value' }, fmtW(value)), h('div', { class: 'dir' }, dir || '\u00a0'), sub);
}

// consumersLine: the part of the home's consumption the plant's consumers
// make up now (their own consumption, metered or estimated); it is inside
// Home's value, never added to it. Nothing for a plant without consumers.
function consumersLine(list) {
  if (!list?.length) return null;
  const now = consumersNow(list);
  return h('div', { class: 'sub', id: 'home-consumers', 'data-value': now ? now.w : '' },
    h('a', { href: '#/consumers' }, 'of which consumers'), ': ', now ? fmtW(now.w) + (now.estimated ? ' est.' : '') : '–');
}

// flow draws the balance; a value the API left out (its device offline or
// never read, or the plant has none of that role) shows as "–" with why,
// never as 0 W idle.
function flow(b, err, consumers) {
  const absent = err ? 'no value' : 'none';
  const pv = b.pvGeneration, buy = b.gridConsumption || 0, feed = b.gridFeedIn || 0;
  const chg = b.batteryCharging || 0, dis = b.batteryDischarging || 0;
  const grid = b.gridConsumption === undefined && b.gridFeedIn === undefined ? node('n-grid', 'Grid', 'gridFeedIn', undefined, absent)
    : buy > 0 ? node('n-grid', 'Grid', 'gridConsumption', buy, 'buying')
      : node('n-grid', 'Grid', 'gridFeedIn', feed, feed > 0 ? 'feeding in' : 'idle');
  const soc = b.batteryStateOfCharge === undefined ? '' : ` · ${Math.round(b.batteryStateOfCharge)} %`;
  const bat = b.batteryCharging === undefined && b.batteryDischarging === undefined ? node('n-bat', 'Battery', 'batteryCharging', undefined, absent + soc)
    : dis > 0 ? node('n-bat', 'Battery', 'batteryDischarging', dis, 'discharging' + soc)
      : node('n-bat', 'Battery', 'batteryCharging', chg, (chg > 0 ? 'charging' : 'idle') + soc);
  return h('div', { class: 'flow', role: 'group', 'aria-label': 'Power flow' },
    node('n-pv', 'PV', 'pvGeneration', pv, pv === undefined ? absent : pv > 0 ? 'producing' : 'idle'),
    h('div', { class: 'arrow v', 'aria-hidden': 'true' }, pv > 0 ? '↓' : '·'),
    grid, h('div', { class: 'arrow l', 'aria-hidden': 'true' }, buy > 0 ? '→' : feed > 0 ? '←' : '·'),
    node('n-home', 'Home', 'totalConsumption', b.totalConsumption, b.totalConsumption === undefined ? absent : 'consuming', consumersLine(consumers)),
    h('div', { class: 'arrow r', 'aria-hidden': 'true' }, dis > 0 ? '←' : chg > 0 ? '→' : '·'),
    bat);
}

function errorBox(err) {
  if (!err) return null;
  return h('div', { class: 'problem', role: 'alert', id: 'live-error' }, err.message || err.code,
    h('ul', null, (err.devices || []).map(d => h('li', null, `${d.deviceId}: ${d.reason}`))));
}

export async function render(ctx, root) {
  const { plantId, tz } = ctx;
  const live = h('section', { class: 'card', id: 'live', 'aria-labelledby': 'live-h' });
  const today = h('section', { class: 'card', id: 'today', 'aria-labelledby': 'today-h' });
  const prices = h('section', { class: 'card', id: 'prices', 'aria-labelledby': 'prices-h', hidden: true });
  root.append(h('h1', null, 'Overview'), live, today, prices);
  addFirstRunNotice(plantId, live);
  let timers = [], stopped = false;
  // The consumers, asked with every live value while the plant has some,
  // else every CONSUMERS_IDLE-th time (one may be configured meanwhile).
  let consumers = null, consumerAsks = 0;
  const CONSUMERS_IDLE = 15;
  async function consumersNowList() {
    if (consumers && !consumers.length && consumerAsks++ % CONSUMERS_IDLE) return consumers;
    try { consumers = await listConsumers(plantId); } catch { consumers = consumers || []; }
    return consumers;
  }

  async function tickLive() {
    try {
      const [r, cs] = await Promise.all([get(`/live/v1/plants/${encodeURIComponent(plantId)}/measurements/sets/EnergyBalance`), consumersNowList()]);
      const b = r.set?.[0] || {};
      if (stopped) return;
      if (b.time) liveMs = localToMs(b.time, tz);
      live.dataset.time = b.time || '';
      clear(live, h('h2', { id: 'live-h' }, 'Now'),
        h('p', { class: 'muted' }, 'Values of ', h('time', { id: 'live-time' }, b.time ? b.time.replace('T', ' ') : '–'), ` (plant time, ${tz}); updated every ${LIVE_MS / 1000} s`),
        errorBox(r.error), flow(b, r.error, cs),
        h('h3', null, 'Live values'), h('div', { class: 'kpis', id: 'live-values' }, liveFields.map(([f, l, fmt]) => kpi(f, l, b[f], fmt))));
    } catch (e) {
      if (!stopped) clear(live, h('h2', { id: 'live-h' }, 'Now'), problemBox(e));
    }
    if (!stopped) timers[0] = setTimeout(tickLive, LIVE_MS);
  }
  let liveMs = Date.now();
  async function tickToday() {
    const date = localDate(liveMs, tz);
    try {
      const r = await get(`/monitoring/v1/plants/${encodeURIComponent(plantId)}/measurements/sets/EnergyBalance/Day`,
        { Date: date, WithTotal: 'true' });
      if (stopped) return;
      const t = r.total || {};
      const last = r.set?.length ? r.set[r.set.length - 1].time : null;
      today.dataset.date = date;
      clear(today, h('h2', { id: 'today-h' }, 'Today, ' + date),
        h('p', { class: 'muted' }, last ? `Stored up to ${localDateTime(localToMs(last, tz), tz).slice(11, 16)} (5-minute intervals)` : 'Nothing stored today yet'),
        h('div', { class: 'kpis', id: 'today-values' }, todayFields.map(([f, l, fmt]) => kpi(f, l, t[f], fmt))));
    } catch (e) {
      if (!stopped) clear(today, h('h2', { id: 'today-h' }, 'Today'), problemBox(e));
    }
    if (!stopped) timers[1] = setTimeout(tickToday, TODAY_MS);
  }
  await tickLive();
  await tickToday();
  const stopPrices = renderPrices(ctx, prices, () => liveMs);
  return () => { stopped = true; timers.forEach(clearTimeout); stopPrices(); };
}
