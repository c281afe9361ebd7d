// Prices and plan: the overview's card of the tariffs' import and feed-in
// price per slot (GET /gateway/v1/tariffs), the PV forecast beside today's
// measured PV (GET /gateway/v1/forecast, the day's energy balance) and the
// day-ahead plan's battery power and SoC (GET /gateway/v1/plan) with its
// saving against no plan, or why control is surplus-only. Hidden while
// the gateway has no tariffs: section.
import { get } from './api.js';
import { h, clear, fmtW, problemBox, localDate, localDateTime, localToMs, wall } from './util.js';
import { batteryActionLabel } from './labels.js';

export const PRICES_MS = 60000;

const pad = n => String(n).padStart(2, '0');
const sec = s => Date.parse(s) / 1000;
export const fmtEur = (v, digits = 2) => (v === undefined || v === null ? '–' : v.toFixed(digits) + ' EUR');
const fmtPrice = v => (v === undefined || v === null ? '–' : (v * 100).toFixed(1) + ' ct/kWh');

// steps doubles each slot's value at its start and end, so a line draws
// a price as the flat step it is (one point per slot edge).
function steps(slots, from, to, value) {
  const xs = [], ys = [];
  for (const s of slots) { xs.push(sec(s[from]), sec(s[to]) - 1); ys.push(value(s), value(s)); }
  return [xs, ys];
}

function plot(el, id, series, axes, data, tz) {
  const width = () => Math.max(280, el.clientWidth);
  const u = new window.uPlot({
    width: width(), height: 240, series: [{ label: 'Time', value: (_, v) => (v === null || v === undefined ? '–' : localDateTime(v * 1000, tz).slice(0, 16)) }, ...series],
    axes: [{ values: (_, ticks) => ticks.map(t => { const w = wall(t * 1000, tz); return w.H === 0 && w.M === 0 ? `${pad(w.d)}.${pad(w.m)}.` : `${pad(w.H)}:${pad(w.M)}`; }) }, ...axes],
    tzDate: ts => window.uPlot.tzDate(new Date(ts * 1e3), tz), cursor: { points: { size: 6 } },
  }, data, el);
  el.id = id;
  el.uplot = u;
  const ro = new ResizeObserver(() => u.setSize({ width: width(), height: 240 }));
  ro.observe(el);
  return () => { ro.disconnect(); u.destroy(); delete el.uplot; };
}

// merge aligns series of [xs, ys] on one sorted time axis (null where a
// series has no point).
function merge(parts) {
  const xs = [...new Set(parts.flatMap(p => p[0]))].sort((a, b) => a - b), at = new Map(xs.map((x, i) => [x, i]));
  return [xs, ...parts.map(([px, py]) => { const c = xs.map(() => null); px.forEach((x, i) => { c[at.get(x)] = py[i]; }); return c; })];
}

function priceChart(el, tariffs, tz) {
  const imp = steps(tariffs.slots, 'startUtc', 'endUtc', s => s.importEurPerKWh);
  const feed = steps(tariffs.slots, 'startUtc', 'endUtc', s => s.feedInEurPerKWh);
  const ct = (_, v) => (v === null || v === undefined ? '–' : fmtPrice(v));
  return plot(el, 'prices-chart', [
    { label: 'Import price (ct/kWh)', scale: 'eur', stroke: '#6b4fbb', width: 1.5, spanGaps: true, points: { show: false }, value: ct },
    { label: 'Feed-in price (ct/kWh)', scale: 'eur', stroke: '#17803d', width: 1.5, spanGaps: true, points: { show: false }, dash: [6, 3], value: ct },
  ], [{ scale: 'eur', label: 'Price (ct/kWh)', size: 60, values: (_, ticks) => ticks.map(t => (t * 100).toFixed(0)) }], merge([imp, feed]), tz);
}

// planChart: today's measured PV (the stored 5-minute means), the PV
// forecast, the plan's battery power (charging positive) and its SoC.
function planChart(el, measured, forecast, plan, tz) {
  const slotEnd = s => new Date(Date.parse(s.startUtc) + (plan.slotMinutes || 15) * 60000).toISOString();
  const parts = [
    [measured.map(r => r.x), measured.map(r => r.y)],
    [forecast.map(s => sec(s.startUtc)), forecast.map(s => s.powerW)],
    steps(plan.steps.map(s => ({ ...s, endUtc: slotEnd(s) })), 'startUtc', 'endUtc', s => s.batteryW),
    [plan.steps.map(s => sec(slotEnd(s))), plan.steps.map(s => s.socPct)],
  ];
  const w = (_, v) => (v === null || v === undefined ? '–' : fmtW(v));
  return plot(el, 'plan-chart', [
    { label: 'PV measured (W)', scale: 'W', stroke: '#b27b00', width: 1.5, spanGaps: true, value: w },
    { label: 'PV forecast (W)', scale: 'W', stroke: '#b27b00', width: 1.5, spanGaps: true, dash: [6, 3], value: w },
    { label: 'Battery planned, charging + (W)', scale: 'W', stroke: '#17803d', width: 1.5, spanGaps: true, value: w },
    { label: 'Battery SoC planned (%)', scale: '%', stroke: '#0b63c5', width: 1.5, spanGaps: true, dash: [2, 3], value: (_, v) => (v === null || v === undefined ? '–' : Math.round(v) + ' %') },
  ], [
    { scale: 'W', label: 'Power (W)', size: 60, values: (_, ticks) => ticks.map(t => (Math.abs(t) >= 1e4 ? t / 1000 + 'k' : String(t))) },
    { scale: '%', side: 1, label: 'SoC (%)', size: 50, grid: { show: false } },
  ], merge(parts), tz);
}

// planSummary says what the plan does now and what it saves, or why
// there is none.
function planSummary(plan) {
  if (!plan.configured) return null;
  if (plan.fallback || !plan.steps.length) {
    return h('p', { class: 'problem', id: 'plan-fallback', role: 'status' }, 'surplus-only: ' + (plan.fallback || 'no plan yet'));
  }
  const now = plan.steps[0];
  return h('div', { class: 'kpis', id: 'plan-values' },
    h('div', { class: 'kpi', 'data-field': 'battery', 'data-value': now.battery },
      h('div', { class: 'label' }, 'Battery now'), h('div', { class: 'value' }, batteryActionLabel(now.battery)),
      h('div', { class: 'sub muted' }, now.reason)),
    h('div', { class: 'kpi', 'data-field': 'savingEur', 'data-value': plan.savingEur ?? '' },
      h('div', { class: 'label' }, 'Saving against no plan'), h('div', { class: 'value' }, fmtEur(plan.savingEur)),
      h('div', { class: 'sub muted' }, `${fmtEur(plan.costEur)} planned, ${fmtEur(plan.baselineCostEur)} without`)));
}

// renderPrices fills card and refreshes it every PRICES_MS until the returned
// stop is called.
export function renderPrices(ctx, card, liveMs) {
  const { plantId, tz } = ctx;
  let stopped = false, timer = null, destroy = [];
  const prices = h('div', { class: 'chart' }), planPlot = h('div', { class: 'chart' });
  async function tick() {
    try {
      const tariffs = await get('/gateway/v1/tariffs');
      if (stopped) return;
      card.dataset.configured = String(tariffs.configured);
      if (!tariffs.configured || tariffs.plantId !== plantId) {
        card.hidden = true;
        return;
      }
      const date = localDate(liveMs(), tz);
      const [plan, fc, day] = await Promise.all([
        get('/gateway/v1/plan'),
        get('/gateway/v1/forecast', { plantId }).catch(() => ({ forecasts: [] })),
        get(`/monitoring/v1/plants/${encodeURIComponent(plantId)}/measurements/sets/EnergyBalance/Day`, { Date: date }).catch(() => ({ set: [] })),
      ]);
      if (stopped) return;
      destroy.forEach(d => d());
      destroy = [];
      const forecast = fc.forecasts?.[0]?.slots || [];
      let prev;
      const measured = (day.set || []).filter(r => typeof r.pvGeneration === 'number')
        .map(r => { prev = localToMs(r.time, tz, prev); return { x: prev / 1000, y: r.pvGeneration }; });
      Object.assign(card.dataset, { slots: tariffs.slots.length, stale: String(tariffs.stale), steps: plan.steps.length, forecast: forecast.length, measured: measured.length });
      const stale = tariffs.stale ? h('p', { class: 'problem', id: 'prices-stale', role: 'status' },
        'Prices stale: the provider failed' + (tariffs.slots.length ? '; the last good prices are kept' : '') +
        (tariffs.market?.lastError ? ` (${tariffs.market.lastError})` : '') + '.') : null;
      // The second chart: today's PV, its forecast and the plan, when
      // there is any of them.
      const planData = measured.length || forecast.length || plan.steps.length;
      clear(card, h('h2', { id: 'prices-h' }, 'Prices and plan'),
        h('p', { class: 'muted' }, `Price per slot from now to ${localDateTime(Date.parse(tariffs.toUtc), tz).slice(0, 16)} (${tz})` +
          (tariffs.market ? `; market prices of ${tariffs.market.source}` : '; time-of-use table')),
        stale, tariffs.slots.length ? prices : h('p', { class: 'muted', id: 'prices-empty' }, 'No prices for the coming hours.'),
        h('h3', null, 'Day-ahead plan'), planSummary(plan), planData ? planPlot : null);
      card.hidden = false;
      if (tariffs.slots.length) destroy.push(priceChart(prices, tariffs, tz));
      if (planData) destroy.push(planChart(planPlot, measured, forecast, plan, tz));
    } catch (e) {
      if (!stopped) { card.hidden = false; clear(card, h('h2', { id: 'prices-h' }, 'Prices and plan'), problemBox(e)); }
    }
    if (!stopped) timer = setTimeout(tick, PRICES_MS);
  }
  tick();
  return () => { stopped = true; clearTimeout(timer); destroy.forEach(d => d()); };
}
