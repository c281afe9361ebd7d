// History: Day / Week / Month / Year charts of the plant's energy balance
// or of any set of a device, with date navigation in the plant's zone.
import { get } from './api.js';
import { h, clear, problemBox, fmtValue, fmtRate, localDate, localDateTime, localToMs, addDays, addMonths, weekday, wall } from './util.js';
import { FIELDS, fieldLabel, fieldUnit, isEnergy, isRate, withUnit, UNITS, setLabel } from './labels.js';

const PERIODS = ['Day', 'Week', 'Month', 'Year'];
const RESOLUTIONS = { OneMinute: 'one a minute', FiveMinutes: 'one per 5 minutes', FifteenMinutes: 'one per 15 minutes', OneHour: 'one an hour', OneDay: 'one a day', OneMonth: 'one a month', OneYear: 'one a year' };
const BALANCE_SHOWN = ['pvGeneration', 'totalConsumption', 'gridFeedIn', 'gridConsumption', 'batteryCharging', 'batteryDischarging', 'batteryStateOfCharge'];
const COLORS = ['#b27b00', '#0b63c5', '#6b4fbb', '#c2185b', '#17803d', '#00838f', '#5d4037', '#7b1fa2', '#455a64', '#ef6c00'];
const DASHES = [[], [6, 3], [2, 3], [10, 3, 2, 3], [1, 1], [12, 4]];

const saved = () => { try { return JSON.parse(sessionStorage.getItem('plantd.history')) || {}; } catch { return {}; } };

function periodDate(period, today) {
  return { Day: today, Week: today, Month: today.slice(0, 7), Year: today.slice(0, 4) }[period];
}
function step(period, date, n) {
  switch (period) {
    case 'Day': return addDays(date, n);
    case 'Week': return addDays(date, 7 * n);
    case 'Month': return addMonths(date, n);
    default: return String(+date + n);
  }
}
function label(period, date) {
  if (period !== 'Week') return date;
  const mon = addDays(date, -weekday(date));
  return `${mon} – ${addDays(mon, 6)}`;
}

// series turns set rows into uPlot data: x in epoch seconds (interval ends
// for Day and Week, the day or month for Month and Year), one series per
// numeric field and per input of indexed fields.
export function toData(rows, tz) {
  const names = [], idx = new Map();
  const add = n => { if (!idx.has(n)) { idx.set(n, names.length); names.push(n); } };
  for (const r of rows) for (const [k, v] of Object.entries(r)) {
    if (k === 'time') continue;
    if (typeof v === 'number') add(k);
    else if (Array.isArray(v)) for (const x of v) add(`${k}.${x.index}`);
  }
  const xs = [], cols = names.map(() => []);
  let prev;
  for (const r of rows) {
    prev = localToMs(r.time, tz, prev);
    xs.push(prev / 1000);
    for (const c of cols) c.push(null);
    for (const [k, v] of Object.entries(r)) {
      if (typeof v === 'number' && idx.has(k)) cols[idx.get(k)][xs.length - 1] = v;
      else if (Array.isArray(v)) for (const x of v) cols[idx.get(`${k}.${x.index}`)][xs.length - 1] = x.value;
    }
  }
  return { names, data: [xs, ...cols] };
}

const pad = n => String(n).padStart(2, '0');

// xLabels labels the time axis in the plant's zone, 24-hour clock.
function xLabels(period, tz) {
  return (_, ticks) => ticks.map(t => {
    const w = wall(t * 1000, tz);
    if (period === 'Year') return `${w.y}-${pad(w.m)}`;
    if (period === 'Month' || (w.H === 0 && w.M === 0)) return `${pad(w.d)}.${pad(w.m)}.`;
    return `${pad(w.H)}:${pad(w.M)}`;
  });
}

// span is the period's extent on the time axis in epoch seconds: the day
// or week from its first to its last midnight (interval ends fall inside),
// the month's days and the year's months with half a step either side.
export function span(period, date, tz) {
  const at = d => localToMs(d + 'T00:00:00', tz) / 1000;
  switch (period) {
    case 'Day': return [at(date), at(addDays(date, 1))];
    case 'Week': { const mon = addDays(date, -weekday(date)); return [at(mon), at(addDays(mon, 7))]; }
    case 'Month': return [at(date + '-01') - 43200, at(addMonths(date, 1) + '-01') - 43200];
    default: return [at(date + '-01-01') - 15 * 86400, at(date + '-12-01') + 15 * 86400];
  }
}

// chart draws the set into el with uPlot: human labels with units, energies
// of Month and Year as bars (one group per day or month), other fields as
// lines, rates in % on the % axis, which spans 0 to 100. el.uplot is the
// chart (for the console and the browser test).
// byVocabulary orders field names (by index) as the balance is shown,
// then as the vocabulary lists them, unknown names last.
function byVocabulary(names) {
  const keys = Object.keys(FIELDS), rank = n => {
    const f = n.split('.')[0], b = BALANCE_SHOWN.indexOf(f), k = keys.indexOf(f);
    return b >= 0 ? b : k >= 0 ? BALANCE_SHOWN.length + k : Infinity;
  };
  return names.map((n, i) => [rank(n), i]).sort((a, b) => a[0] - b[0] || a[1] - b[1]).map(([, i]) => i);
}

function chart(el, r, period, date, tz, shown) {
  const set = toData(r.set, tz), order = byVocabulary(set.names);
  const names = order.map(i => set.names[i]), data = [set.data[0], ...order.map(i => set.data[i + 1])];
  // Rates come as 0..1: the chart shows them in %.
  names.forEach((n, i) => { if (isRate(n)) data[i + 1] = data[i + 1].map(v => (v === null ? null : v * 100)); });
  // The axis shows the whole period however little is stored (uPlot would
  // spread one point over years): empty points at its ends.
  const [from, to] = span(period, date, tz), xs = data[0];
  if (from < xs[0]) { xs.unshift(from); data.slice(1).forEach(c => c.unshift(null)); }
  if (to > xs[xs.length - 1]) { xs.push(to); data.slice(1).forEach(c => c.push(null)); }
  const unitOfName = n => fieldUnit(n, period);
  // Without a chosen list, show the fields of the first two units (power
  // and energy first).
  const rank = u => (u === 'W' || u === 'Wh' ? 0 : 1);
  const all = [...new Set(names.map(unitOfName))].sort((a, b) => rank(a) - rank(b));
  const visible = n => (shown ? shown.includes(n) : all.slice(0, 2).includes(unitOfName(n)));
  const axisUnits = [...new Set(names.filter(visible).map(unitOfName))].sort((a, b) => rank(a) - rank(b)).slice(0, 2);
  // Bars: the energies of a day (Month) or a month (Year), side by side in
  // 80 % of the slot, each shown series its share.
  const slot = period === 'Month' ? 86400 : period === 'Year' ? 30.4 * 86400 : 0;
  const bar = names.map(n => slot > 0 && isEnergy(n));
  const barWidth = u => slot * 0.8 / Math.max(1, u.series.filter((s, i) => i > 0 && s.show && bar[i - 1]).length);
  const barStart = (u, si) => {
    const shownBars = u.series.map((s, i) => i > 0 && s.show && bar[i - 1] ? i : 0).filter(Boolean);
    const k = shownBars.indexOf(si), w = barWidth(u);
    return u.data[0].map(x => x - (shownBars.length * w) / 2 + Math.max(0, k) * w);
  };
  const bars = window.uPlot.paths.bars({ disp: { x0: { unit: 1, values: barStart }, size: { unit: 1, values: u => [barWidth(u)] } } });
  const series = [{ label: 'Time', value: (_, v) => v === null || v === undefined ? '–' : localDateTime(v * 1000, tz).slice(0, 16) }];
  names.forEach((n, i) => {
    const u = unitOfName(n), color = COLORS[i % COLORS.length];
    series.push({
      label: withUnit(fieldLabel(n), u), scale: u || 'ratio', stroke: color, width: bar[i] ? 1 : 1.5, show: visible(n),
      ...(bar[i] ? { paths: bars, fill: color + '99', points: { show: false } }
        : { dash: DASHES[Math.floor(i / 2) % DASHES.length], points: slot ? { show: true } : {} }), // else uPlot's: points where data is sparse
      value: (_, v) => v === null || v === undefined ? '–' : fmtValue(v, u),
    });
  });
  const incrs = { Day: [300, 900, 1800, 3600, 7200, 10800, 21600, 43200], Week: [3600, 10800, 21600, 43200, 86400, 172800, 259200] }[period];
  const axes = [{ values: xLabels(period, tz), ...(incrs ? { incrs } : {}) }];
  axisUnits.forEach((u, i) => axes.push({ scale: u || 'ratio', side: i === 0 ? 3 : 1, label: UNITS[u] ?? u, size: 60,
    grid: { show: i === 0 }, values: (_, ticks) => ticks.map(t => Math.abs(t) >= 1e4 ? (t / 1000) + 'k' : String(t)) }));
  const width = () => Math.max(280, el.clientWidth);
  // The plotting area keeps 300 px and more on a phone: the legend, up to
  // 14 rows, folds away below it (open by default on wide screens only).
  // By the chart's own width (a phone's is under 500 px), which the
  // observer below sees change.
  const height = () => (el.clientWidth < 500 ? 380 : 340);
  const wide = () => el.clientWidth >= 640;
  let wasWide = wide();
  const legend = h('details', { class: 'legend', id: 'history-legend', open: wasWide || undefined }, h('summary'));
  const summary = p => {
    const n = p.series.filter((s, i) => i > 0 && s.show).length;
    legend.firstChild.textContent = `Legend: ${n} of ${p.series.length - 1} values shown (tap one to show or hide it)`;
  };
  const u = new window.uPlot({ width: width(), height: height(), series, axes, scales: { '%': { range: [0, 100] } },
    tzDate: ts => window.uPlot.tzDate(new Date(ts * 1e3), tz), cursor: { points: { size: 6 } },
    legend: { live: true, mount: (_, table) => legend.append(table) },
    hooks: { setScale: [(p, key) => { if (key === 'x') Object.assign(el.dataset, { from: p.scales.x.min, to: p.scales.x.max }); }],
      setSeries: [p => summary(p)] } }, data, el);
  el.append(legend);
  summary(u);
  el.uplot = u;
  // Crossing to a phone's width folds the legend, back to a wide one
  // unfolds it; in between it stays as the reader left it.
  const ro = new ResizeObserver(() => {
    u.setSize({ width: width(), height: height() });
    if (wide() !== wasWide) legend.open = wasWide = wide();
  });
  ro.observe(el);
  return () => { ro.disconnect(); u.destroy(); delete el.uplot; };
}

function totals(r) {
  if (!r.total) return null;
  const all = Object.entries(r.total).filter(([k, v]) => k !== 'time' && typeof v === 'number');
  const rows = byVocabulary(all.map(([k]) => k)).map(i => all[i]);
  if (!rows.length) return null;
  return h('div', { class: 'scroll' }, h('table', { id: 'history-total' },
    h('caption', { class: 'muted' }, 'Period total (energies summed, other values averaged)'),
    h('tbody', null, rows.map(([k, v]) => {
      const text = isRate(k) ? fmtRate(v) : fmtValue(v, fieldUnit(k, 'Total'));
      return h('tr', { 'data-field': k, 'data-value': v }, h('th', { scope: 'row', title: k }, fieldLabel(k)), h('td', { class: 'num' }, text));
    }))));
}

export async function render(ctx, root) {
  const { plantId, tz } = ctx;
  const today = localDate(await ctx.plantNow(), tz);
  const st = Object.assign({ source: 'plant', period: 'Day' }, saved());
  if (!st.date || !PERIODS.includes(st.period)) st.date = periodDate(st.period = PERIODS.includes(st.period) ? st.period : 'Day', today);
  const source = h('select', { id: 'history-source', 'aria-label': 'Data' }, h('option', { value: 'plant' }, 'Plant: energy balance'));
  const periodBtns = PERIODS.map(p => h('button', { type: 'button', 'data-period': p, 'aria-pressed': String(p === st.period) }, p));
  const dateLabel = h('span', { class: 'date', id: 'history-date', 'aria-live': 'polite' });
  const prev = h('button', { type: 'button', id: 'history-prev', 'aria-label': 'Previous period' }, '◀');
  const next = h('button', { type: 'button', id: 'history-next', 'aria-label': 'Next period' }, '▶');
  const now = h('button', { type: 'button', id: 'history-today' }, 'Today');
  const plot = h('div', { class: 'chart', id: 'history-chart' });
  const below = h('div');
  root.append(h('h1', null, 'History'), h('section', { class: 'card' },
    h('div', { class: 'toolbar' }, source, h('span', { role: 'group', 'aria-label': 'Period' }, periodBtns)),
    h('div', { class: 'toolbar' }, prev, dateLabel, next, now), plot, below));
  let destroy = null, seq = 0;

  async function draw() {
    sessionStorage.setItem('plantd.history', JSON.stringify(st));
    periodBtns.forEach(b => b.setAttribute('aria-pressed', String(b.dataset.period === st.period)));
    dateLabel.textContent = label(st.period, st.date);
    next.disabled = st.date >= periodDate(st.period, today);
    const my = ++seq;
    const [kind, dev, set] = st.source.split(':');
    const path = kind === 'plant'
      ? `/monitoring/v1/plants/${encodeURIComponent(plantId)}/measurements/sets/EnergyBalance/${st.period}`
      : `/monitoring/v1/devices/${encodeURIComponent(dev)}/measurements/sets/${set}/${st.period}`;
    try {
      const r = await get(path, { Date: st.date, WithTotal: 'true' });
      if (my !== seq || !ctx.active()) return;
      if (destroy) { destroy(); destroy = null; }
      clear(plot);
      clear(below);
      plot.dataset.rows = r.set.length;
      plot.dataset.resolution = r.resolution;
      if (!r.set.length) {
        plot.append(h('p', { class: 'muted', id: 'history-empty' }, 'Nothing stored for this period.'));
        return;
      }
      destroy = chart(plot, r, st.period, st.date, tz, kind === 'plant' ? BALANCE_SHOWN : null);
      below.append(h('p', { class: 'muted' }, `${r.set.length} intervals (${RESOLUTIONS[r.resolution] ?? r.resolution}); times in ${tz}.`), totals(r));
    } catch (e) {
      if (my === seq) { clear(plot, problemBox(e)); clear(below); }
    }
  }
  periodBtns.forEach(b => b.addEventListener('click', () => {
    st.period = b.dataset.period;
    st.date = periodDate(st.period, st.date.length >= 10 ? st.date : today);
    draw();
  }));
  prev.addEventListener('click', () => { st.date = step(st.period, st.date, -1); draw(); });
  next.addEventListener('click', () => { st.date = step(st.period, st.date, 1); draw(); });
  now.addEventListener('click', () => { st.date = periodDate(st.period, today); draw(); });
  source.addEventListener('change', () => { st.source = source.value; draw(); });

  // Device sets for the source list.
  try {
    const r = await get(`/monitoring/v1/plants/${encodeURIComponent(plantId)}/devices`);
    const lists = await Promise.all(r.devices.map(d => get(`/monitoring/v1/devices/${encodeURIComponent(d.deviceId)}/measurements/sets`)
      .then(l => [d, l.sets], () => [d, []])));
    for (const [d, sets] of lists) {
      if (!sets.length) continue;
      source.append(h('optgroup', { label: d.name }, sets.map(s => h('option', { value: `device:${d.deviceId}:${s}`, title: s }, `${d.name}: ${setLabel(s)}`))));
    }
  } catch { /* the plant's balance still works */ }
  if (![...source.options].some(o => o.value === st.source)) st.source = 'plant';
  source.value = st.source;
  await draw();
  return () => { seq++; if (destroy) destroy(); };
}
