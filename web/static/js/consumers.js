// Consumers: the home energy manager's switchable loads (relay outputs,
// SG-Ready heat pumps, Shelly plugs) and EV chargers with their output,
// consumption and why; an installer sets each one's mode (Auto, On, Off;
// a charger's PV, Min+PV, Now, Off) here.
import { get, put } from './api.js';
import { h, clear, fmtW, fmtWh, fmtUtc, problemBox } from './util.js';
import { reasonLabel, sgReadyLabel, MODES, CHARGER_MODES, DRIVERS } from './labels.js';

const REFRESH_MS = 5000;
const PATH = '/gateway/v1/consumers';

// listConsumers is the plant's consumers ([] when it has none).
export async function listConsumers(plantId) {
  const r = await get(PATH, { plantId });
  return r.consumers || [];
}

// consumersNow sums the consumers' consumption now (W): the part of the
// home's consumption they make up, never added to it. null when none is
// known; estimated when a summed value is.
export function consumersNow(list) {
  const known = list.filter(c => typeof c.consumption === 'number');
  if (!known.length) return null;
  return { w: known.reduce((s, c) => s + c.consumption, 0), estimated: known.some(c => c.consumptionEstimated) };
}

// mayInstall: whether the signed-in credential has the installer role,
// which setting a mode needs. The API has no "who am I"; the plant log
// needs the same role, so one entry of it answers (403 below installer).
// null when the probe failed otherwise.
export async function mayInstall(plantId) {
  try {
    await get(`/monitoring/v1/plants/${encodeURIComponent(plantId)}/logs`, { limit: 1 });
    return true;
  } catch (e) {
    return e.status !== 403 && e.status !== 401 ? null : false;
  }
}

function badge(s) { return h('span', { class: 'badge s-' + s }, s); }

const est = c => (c.consumptionEstimated ? ' est.' : '');

function stateCell(c) {
  const sg = c.sgReadyState
    ? h('span', { class: 'sg', 'data-sg': c.sgReadyState, title: 'SG-Ready operating state' }, ' SG-Ready ' + sgReadyLabel(c.sgReadyState))
    : null;
  const ch = c.charger
    ? h('span', { class: 'charger', 'data-current': c.charger.current, 'data-status': c.charger.status, title: 'OCPP connector status, charging current' },
      ` ${c.charger.status || 'not connected'}, ${c.charger.current} A × ${c.charger.phases}` +
      (typeof c.charger.vehicleSoc === 'number' ? `, car ${c.charger.vehicleSoc.toFixed(0)} %` : ''))
    : null;
  return [c.switchingState ? badge(c.switchingState) : h('span', { class: 'muted' }, 'not read yet'), sg, ch];
}

// modeName is a mode as the page shows it: a charger's in evcc's words.
const modeName = (c, m) => (c.charger ? CHARGER_MODES[m]?.split(':')[0] ?? m : m);

function modeCell(c, canSet, onSet) {
  const modes = c.charger ? CHARGER_MODES : MODES;
  if (!canSet) return h('span', { class: 'mode', title: modes[c.mode] || '' }, modeName(c, c.mode));
  const sel = h('select', { class: 'mode', 'aria-label': `Mode of ${c.name}`, 'data-consumer': c.deviceId, title: modes[c.mode] || '' },
    Object.entries(modes).map(([m, words]) => h('option', { value: m, selected: m === c.mode, title: words }, modeName(c, m))));
  sel.addEventListener('change', () => onSet(c, sel));
  return sel;
}

function row(c, tz, canSet, onSet) {
  // One element per cell: on a phone a cell is its label and this.
  const cell = (label, attrs, ...content) => h('td', { 'data-label': label, ...attrs }, h('span', null, ...content));
  const switches = c.maxSwitchesPerHour ? `${c.switchesLastHour} / ${c.maxSwitchesPerHour}` : `${c.switchesLastHour} (no bound)`;
  return h('tr', { 'data-consumer': c.deviceId, 'data-switching': c.switchingState || '', 'data-mode': c.mode, 'data-reason': c.reason,
    'data-consumption': c.consumption ?? '', 'data-estimated': c.consumptionEstimated ? 'true' : 'false', 'data-sg': c.sgReadyState || '',
    'data-current': c.charger ? c.charger.current : '' },
  cell('Consumer', null, h('strong', { class: 'name' }, c.name), h('br'), h('span', { class: 'muted driver' }, DRIVERS[c.driver] || c.driver)),
  cell('State', null, stateCell(c)),
  cell('Power now', { class: 'num consumption' }, c.consumption === undefined ? '–' : fmtW(c.consumption) + est(c)),
  cell('Mode', null, modeCell(c, canSet, onSet)),
  cell('Today', { class: 'num' }, c.energyToday === undefined ? '–' : fmtWh(c.energyToday) + est(c)),
  cell('Next must-run', { class: 'time' }, c.nextMustRun ? fmtUtc(c.nextMustRun, tz) : 'none'),
  cell('Why', { class: 'reason', title: c.reason }, reasonLabel(c.reason)),
  cell('Switchings/h', { class: 'num switches', title: 'switchings in the last hour / the bound per hour' }, switches));
}

function noConsumers() {
  return h('section', { class: 'card', id: 'consumers-none', role: 'status' },
    h('h2', null, 'No consumers'),
    h('p', null, 'This plant has no consumers: loads such as a relay output, an SG-Ready heat pump or a Shelly plug ',
      'that the gateway switches on PV surplus. They are added in the gateway\'s configuration.'));
}

export async function render(ctx, root) {
  const { plantId, tz } = ctx;
  const body = h('tbody', { id: 'consumer-body' });
  const status = h('p', { class: 'muted', id: 'consumer-status' });
  const note = h('p', { class: 'muted', id: 'consumer-role', hidden: true }, 'Setting a mode needs the installer role; you are signed in with a lower one.');
  const result = h('div', { id: 'consumer-result', 'aria-live': 'polite' });
  const table = h('div', { class: 'scroll' }, h('table', { id: 'consumer-table' },
    h('thead', null, h('tr', null, ['Consumer', 'State', 'Power now', 'Mode', 'Today', 'Next must-run (plant)', 'Why', 'Switchings, last hour']
      .map((t, i) => h('th', { scope: 'col', class: [2, 4, 7].includes(i) ? 'num' : null }, t)))), body));
  const card = h('section', { class: 'card', 'aria-label': 'Consumers' },
    h('p', { class: 'muted' }, 'Auto: the gateway switches them on PV surplus and in their must-run windows; On and Off hold them by hand. ',
      'Minimum on and off times and the switchings per hour protect the machines in every mode.'),
    status, note, result, table);
  const empty = h('div');
  root.append(h('h1', null, 'Consumers'), empty, card);
  let timer, stopped = false, busy = false;
  const canSet = await mayInstall(plantId);
  note.hidden = canSet !== false;

  async function setMode(c, sel) {
    busy = true;
    clear(result);
    try {
      const r = await put(`${PATH}/${encodeURIComponent(c.deviceId)}/mode`, { mode: sel.value });
      clear(result, h('p', { role: 'status', id: 'consumer-set', 'data-consumer': r.deviceId, 'data-mode': r.mode },
        `${r.name}: mode ${r.mode}. ${reasonLabel(r.reason)}.`));
    } catch (e) {
      clear(result, h('div', { id: 'consumer-refused', 'data-consumer': c.deviceId }, problemBox(e)));
    }
    busy = false;
    await load(true);
  }

  async function load(force) {
    try {
      const list = await listConsumers(plantId);
      // A selector in use keeps its place until it is left.
      const inUse = document.activeElement?.matches?.('#consumer-table select');
      if (stopped || !ctx.active() || (!force && (busy || inUse))) return;
      clear(empty, list.length ? null : noConsumers());
      card.hidden = !list.length;
      clear(body, list.map(c => row(c, tz, canSet !== false, setMode)));
      const on = list.filter(c => c.switchingState === 'On').length, now = consumersNow(list);
      status.textContent = `${list.length} consumers, ${on} on` + (now ? `, ${fmtW(now.w)}${now.estimated ? ' (partly estimated)' : ''} now` : '') +
        `; refreshed every ${REFRESH_MS / 1000} s`;
    } catch (e) {
      if (!stopped && ctx.active()) clear(empty, problemBox(e));
    }
  }
  async function tick() {
    await load(false);
    if (!stopped) timer = setTimeout(tick, REFRESH_MS);
  }
  await tick();
  return () => { stopped = true; clearTimeout(timer); };
}
