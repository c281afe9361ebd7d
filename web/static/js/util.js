// DOM building, number formatting and plant-time arithmetic.

// h builds an element: h('td', {class: 'num'}, 'text', child...). Text is
// always text (never parsed as HTML).
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else el.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat()) if (c !== undefined && c !== null && c !== false) el.append(c instanceof Node ? c : String(c));
  return el;
}

export function clear(el, ...children) { el.replaceChildren(...children.flat().filter(c => c)); return el; }

export function problemBox(e) {
  const fields = (e.problem?.errors || []).map(f => h('li', null, `${f.field}: ${f.message}`));
  return h('div', { class: 'problem', role: 'alert' }, e.message || String(e), fields.length ? h('ul', null, fields) : null);
}

// Numbers: W and Wh switch to k above 1000; plain ratios become percent.
export function fmtW(w) {
  if (w === undefined || w === null) return '–';
  return Math.abs(w) >= 1000 ? (w / 1000).toFixed(2) + ' kW' : Math.round(w) + ' W';
}
export function fmtWh(wh) {
  if (wh === undefined || wh === null) return '–';
  if (Math.abs(wh) >= 1e6) return (wh / 1e6).toFixed(2) + ' MWh';
  return Math.abs(wh) >= 1000 ? (wh / 1000).toFixed(2) + ' kWh' : Math.round(wh) + ' Wh';
}
export function fmtRate(r) { return r === undefined || r === null ? '–' : Math.round(r * 100) + ' %'; }
export function fmtValue(v, unit) {
  switch (unit) {
    case 'W': return fmtW(v);
    case 'Wh': return fmtWh(v);
    case '': return (Math.round(v * 1000) / 1000).toString();
    default: {
      const digits = Math.abs(v) >= 100 ? 1 : 2;
      return (Math.round(v * 10 ** digits) / 10 ** digits) + ' ' + unit;
    }
  }
}

// Plant time. The API writes set times in the plant's zone without offset;
// everything else in UTC. These helpers convert with the browser's IANA
// zone data, so DST days have their 23 or 25 hours.
const fmts = new Map();
function partsFmt(tz) {
  if (!fmts.has(tz)) fmts.set(tz, new Intl.DateTimeFormat('en-US', { timeZone: tz, hourCycle: 'h23',
    year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit' }));
  return fmts.get(tz);
}
export function wall(ms, tz) {
  const p = {};
  for (const { type, value } of partsFmt(tz).formatToParts(new Date(ms))) p[type] = value;
  return { y: +p.year, m: +p.month, d: +p.day, H: +p.hour % 24, M: +p.minute, S: +p.second };
}
const pad = (n, w = 2) => String(n).padStart(w, '0');
function offsetAt(ms, tz) {
  const w = wall(ms, tz);
  return Date.UTC(w.y, w.m - 1, w.d, w.H, w.M, w.S) - Math.floor(ms / 1000) * 1000;
}
// localToMs turns a plant-local "YYYY-MM-DDTHH:mm[:ss]" into epoch ms. A
// wall time that occurs twice (the hour the clocks go back) resolves to
// the first instant after `after` when given, else the earlier one.
export function localToMs(s, tz, after) {
  const [d, t = '00:00:00'] = s.split('T');
  const [y, mo, da] = d.split('-').map(Number);
  const [H, M, S = 0] = t.split(':').map(Number);
  const naive = Date.UTC(y, mo - 1, da, H, M, S);
  const cands = [...new Set([offsetAt(naive - 12 * 3600e3, tz), offsetAt(naive + 12 * 3600e3, tz)])]
    .map(off => naive - off).filter(ms => offsetAt(ms, tz) === naive - ms).sort((a, b) => a - b);
  if (!cands.length) return naive - offsetAt(naive - 12 * 3600e3, tz); // a wall time the clocks skip
  if (after !== undefined) return cands.find(ms => ms > after) ?? cands[cands.length - 1];
  return cands[0];
}
export function localDate(ms, tz) { const w = wall(ms, tz); return `${w.y}-${pad(w.m)}-${pad(w.d)}`; }
export function localDateTime(ms, tz) { const w = wall(ms, tz); return `${w.y}-${pad(w.m)}-${pad(w.d)} ${pad(w.H)}:${pad(w.M)}:${pad(w.S)}`; }
export function localInput(ms, tz) { const w = wall(ms, tz); return `${w.y}-${pad(w.m)}-${pad(w.d)}T${pad(w.H)}:${pad(w.M)}`; }
export function fmtUtc(s, tz) { return s ? localDateTime(Date.parse(s), tz) : '–'; }

// Calendar steps on plain dates (no clock involved, so no DST trouble).
export function addDays(date, n) {
  const [y, m, d] = date.split('-').map(Number);
  const t = new Date(Date.UTC(y, m - 1, d + n));
  return `${t.getUTCFullYear()}-${pad(t.getUTCMonth() + 1)}-${pad(t.getUTCDate())}`;
}
export function addMonths(ym, n) {
  const [y, m] = ym.split('-').map(Number);
  const t = new Date(Date.UTC(y, m - 1 + n, 1));
  return `${t.getUTCFullYear()}-${pad(t.getUTCMonth() + 1)}`;
}
export function weekday(date) { // 0 = Monday
  const [y, m, d] = date.split('-').map(Number);
  return (new Date(Date.UTC(y, m - 1, d)).getUTCDay() + 6) % 7;
}
// relative says how long before now (the gateway's clock) ms was.
export function relative(ms, now = Date.now()) {
  const s = Math.max(0, Math.round((now - ms) / 1000));
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  return `${Math.round(s / 3600)} h ago`;
}
