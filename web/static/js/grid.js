// Grid control: schedules with their status, a form for installers to
// create (or, newest wins, overwrite) a limit window, and the current
// settings per type as the inverters report them.
import { get, post } from './api.js';
import { h, clear, fmtUtc, problemBox, localInput, localToMs } from './util.js';
import { settingsLabel, configLabel } from './labels.js';

const REFRESH_MS = 10000;
const FINISHED = ['done', 'superseded'];
const FALLBACK_TYPES = ['activePowerGridSettings', 'reactivePowerGridSettings', 'frequencyFaultRideThroughSettings', 'voltageFaultRideThroughSettings'];

function badge(s) { return h('span', { class: 'badge s-' + s }, s); }

function valueOf(c) {
  if (c.value !== undefined) return `${c.value} ${c.unit || ''}`.trim();
  if (c.curve?.points) return c.curve.points.map(p => `(${p.x}, ${p.y})`).join(' ');
  if (c.curve?.params) return Object.entries(c.curve.params).map(([k, v]) => `${k}=${v}`).join(' ');
  return '';
}

// partialNote says which share of the plant a window governs when some
// active inverters do not act on its command.
function partialNote(c) {
  if (!c.partial) return '';
  const not = (c.inverters || []).filter(i => !i.acts).map(i => `${i.deviceId} (${i.reason?.code || 'not acting'})`);
  const share = c.coverage !== undefined ? `${Math.round(c.coverage * 100)} % of rated power` : 'part of the plant';
  return `partial: governs ${share}; not acting: ${not.join(', ')}`;
}

function scheduleRows(list, tz, all) {
  const rows = [];
  for (const s of [...list].sort((a, b) => b.createdAt.localeCompare(a.createdAt))) {
    for (const c of s.commands) {
      if (!all && FINISHED.includes(c.status)) continue;
      const cell = (label, attrs, ...content) => h('td', { 'data-label': label, ...attrs }, ...content);
      rows.push(h('tr', { 'data-schedule': s.scheduleId, 'data-command': c.command, 'data-status': c.status, 'data-value': c.value ?? '' },
        cell('Command', null, c.command), cell('Start', { class: 'time' }, fmtUtc(c.start, tz)), cell('End', { class: 'time' }, fmtUtc(c.end, tz)),
        cell('Value', null, valueOf(c)), cell('Status', null, badge(c.status), c.late ? ' late' : ''),
        cell('Notes', { class: 'muted' }, [c.overriddenBy ? `overridden by ${c.overriddenBy}, which governs now` : '', partialNote(c), c.reason, c.appliedAt ? 'applied ' + fmtUtc(c.appliedAt, tz) : ''].filter(Boolean).join('; ')),
        cell('Sent by', { class: 'muted' }, `${s.createdBy || ''} ${fmtUtc(s.createdAt, tz)}`)));
    }
  }
  return rows;
}

// settingsBlock: one settings type, its configurations headed in words
// with the API's type name as a caption; on a phone each device's values
// are a block of label and value (app.css, table.stack).
function settingsBlock(r) {
  return h('details', { class: 'settings', 'data-type': r.settingsType, open: r.settingsType === 'activePowerGridSettings' },
    h('summary', null, settingsLabel(r.settingsType), ' ', h('code', { class: 'api-name' }, r.settingsType)),
    r.configurations.map(cf => h('div', { class: 'config', 'data-type': cf.type },
      h('h3', null, configLabel(cf.type), ' ', cf.active ? badge('active') : h('span', { class: 'badge s-Off' }, 'inactive'), cf.supported ? '' : ' (not supported)'),
      h('p', { class: 'api-name' }, h('code', null, cf.type)),
      h('table', { class: 'stack' },
        h('thead', null, h('tr', null, ['Device', 'Model', 'Enabled', 'Value', 'Set by plantd'].map(t => h('th', { scope: 'col' }, t)))),
        h('tbody', null, cf.values.map(v => h('tr', null, h('td', { 'data-label': 'Device' }, v.device), h('td', { class: 'num', 'data-label': 'Model' }, v.model),
          h('td', { 'data-label': 'Enabled' }, v.enabled ? 'yes' : 'no'),
          h('td', { 'data-label': 'Value' }, v.limitPct !== undefined ? v.limitPct + ' %' : v.powerFactor !== undefined ? 'PF ' + v.powerFactor : valueOf(v)),
          h('td', { 'data-label': 'Set by plantd' }, v.controlledByPlantd ? 'yes' : 'no'))))))));
}

export async function render(ctx, root) {
  const { plantId, tz } = ctx;
  const base = `/gridcontrol/v1/plants/${encodeURIComponent(plantId)}`;
  const showAll = h('input', { type: 'checkbox', id: 'sched-all' });
  const tbody = h('tbody', { id: 'sched-body' });
  const schedStatus = h('div');
  const now = await ctx.plantNow();
  const cmd = h('select', { id: 'gc-command', name: 'command' },
    h('option', { value: 'opModMaxLimW' }, 'Active power limit (opModMaxLimW)'),
    h('option', { value: 'FeedInLimit' }, 'Feed-in limit at the grid point (FeedInLimit)'));
  const value = h('input', { id: 'gc-value', name: 'value', type: 'number', min: '0', max: '100', step: '1', value: '60', required: true });
  const start = h('input', { id: 'gc-start', name: 'start', type: 'datetime-local', value: localInput(now + 60e3, tz), required: true });
  const end = h('input', { id: 'gc-end', name: 'end', type: 'datetime-local', value: localInput(now + 3600e3, tz), required: true });
  const result = h('div', { id: 'gc-result', 'aria-live': 'polite' });
  const form = h('form', { class: 'inline', id: 'gc-form', novalidate: true },
    h('div', null, h('label', { for: 'gc-command' }, 'Command'), cmd),
    h('div', null, h('label', { for: 'gc-value' }, 'Limit (% of rated power)'), value),
    h('div', null, h('label', { for: 'gc-start' }, `Start (plant time, ${tz})`), start),
    h('div', null, h('label', { for: 'gc-end' }, 'End (plant time)'), end),
    h('div', null, h('button', { type: 'submit', class: 'primary' }, 'Create limit window')));
  const settings = h('div', { id: 'settings' }, h('p', { class: 'muted' }, 'Reading the inverters…'));
  root.append(h('h1', null, 'Grid control'),
    h('section', { class: 'card', 'aria-labelledby': 'sched-h' }, h('h2', { id: 'sched-h' }, 'Schedules'),
      h('p', null, h('label', null, showAll, ' also show finished and superseded windows')), schedStatus,
      h('div', { class: 'scroll' }, h('table', { id: 'sched-table' },
        h('thead', null, h('tr', null, ['Command', 'Start', 'End', 'Value', 'Status', 'Notes', 'Sent by'].map(t => h('th', { scope: 'col' }, t)))), tbody))),
    h('section', { class: 'card', 'aria-labelledby': 'new-h' }, h('h2', { id: 'new-h' }, 'New limit window (installer)'),
      h('p', { class: 'muted' }, 'Where windows of one command overlap, the newest of a role wins: this overwrites your older windows for its time. A grid operator\'s limit still holds where it is tighter (your window then shows overridden).'), form, result),
    h('section', { class: 'card', 'aria-labelledby': 'set-h' }, h('h2', { id: 'set-h' }, 'Current settings'),
      h('p', { class: 'muted' }, 'As the inverters report them now.'), settings));

  let timer, stopped = false, last = [];
  const paint = () => {
    const rows = scheduleRows(last, tz, showAll.checked);
    clear(tbody, rows);
    clear(schedStatus, rows.length ? null : h('p', { class: 'muted', id: 'sched-none' }, showAll.checked ? 'No schedules.' : 'No active or upcoming windows.'));
  };
  async function loadSchedules() {
    try {
      const r = await get(base + '/schedules');
      if (stopped) return;
      last = r.schedules;
      paint();
    } catch (e) {
      if (!stopped) clear(schedStatus, problemBox(e));
    }
    clearTimeout(timer);
    if (!stopped) timer = setTimeout(loadSchedules, REFRESH_MS);
  }
  showAll.addEventListener('change', paint);
  form.addEventListener('submit', async ev => {
    ev.preventDefault();
    clear(result);
    if (!start.value || !end.value || value.value === '') { result.append(h('p', { class: 'problem', role: 'alert' }, 'Fill in limit, start and end.')); return; }
    const body = { commands: [{ command: cmd.value, start: new Date(localToMs(start.value, tz)).toISOString(),
      end: new Date(localToMs(end.value, tz)).toISOString(), value: Number(value.value), unit: '%' }] };
    try {
      const r = await post(base + '/schedules', body);
      result.append(h('p', { role: 'status', id: 'gc-created', 'data-schedule': r.schedule.scheduleId }, `Stored as schedule ${r.schedule.scheduleId}.`));
      await loadSchedules();
    } catch (e) {
      result.append(e.status === 403 ? h('p', { class: 'problem', role: 'alert' }, 'Writing schedules needs the installer or grid-operator role.') : problemBox(e));
    }
  });
  await loadSchedules();

  (async () => {
    let types = FALLBACK_TYPES;
    try {
      const doc = await fetch('/openapi.json', { credentials: 'omit' }).then(r => r.json());
      const ps = doc.paths['/gridcontrol/v1/plants/{id}/settings/{settingsType}'].get.parameters;
      types = ps.find(p => p.name === 'settingsType').schema.enum || types;
    } catch { /* the list above */ }
    const blocks = await Promise.all(types.map(t => get(`${base}/settings/${t}`).then(settingsBlock, e => h('div', null, h('h3', null, settingsLabel(t), ' ', h('code', { class: 'api-name' }, t)), problemBox(e)))));
    if (!stopped) clear(settings, blocks);
  })();
  return () => { stopped = true; clearTimeout(timer); };
}
