// Grid control: schedules with their status, origin, recurrence and (on
// request) their audit, a Cancel button for whoever may cancel, and a
// form for installers to create (or, newest wins, overwrite) a limit
// window. Commands and statuses in words (labels.js), the API's names as
// titles and data attributes. The settings in effect are the Settings
// view's (settings.js).
import { get, post, del } from './api.js';
import { h, clear, fmtUtc, problemBox, localInput, localToMs } from './util.js';
import { originLabel, repeatLabel, durationLabel, commandLabel, statusLabel } from './labels.js';
import { mayInstall } from './consumers.js';

const REFRESH_MS = 10000;
const FINISHED = ['done', 'superseded'];
// OPEN: the statuses of a window that has not ended (a cancelled one has).
const OPEN = ['pending', 'active', 'overridden'];

// badge: a status in words; the API's status its class, title and data.
export function badge(s) { return h('span', { class: 'badge s-' + s, title: s, 'data-status': s }, statusLabel(s)); }

// valueOf: a window's value in words ("60 % of rated power", "5000 W",
// "power factor 0.95", a curve's points).
function valueOf(c) {
  if (c.value !== undefined) {
    if (/^opModFixedP[Ff]/.test(c.command)) return `power factor ${c.value}`;
    return c.unit === 'W' ? `${c.value} W` : `${c.value} % of rated power`;
  }
  if (c.curve?.points) return c.curve.points.map(p => `(${p.x}, ${p.y})`).join(' ');
  if (c.curve?.params) return Object.entries(c.curve.params).map(([k, v]) => `${k}=${v}`).join(' ');
  return c.command === 'OpModDisconnect' ? 'disconnected' : '';
}

// partialNote says which share of the plant a window governs when some
// active inverters do not act on its command.
function partialNote(c) {
  if (!c.partial) return '';
  const not = (c.inverters || []).filter(i => !i.acts).map(i => `${i.deviceId} (${i.reason?.code || 'not acting'})`);
  const share = c.coverage !== undefined ? `${Math.round(c.coverage * 100)} % of rated power` : 'part of the plant';
  return `partial: governs ${share}; not acting: ${not.join(', ')}`;
}

// A cancelled window has ended (or never starts), whatever its status at
// the instant (a window cancelled before its start keeps its start as its
// end, so it lists pending until then).
const isOpen = c => !c.cancelled && OPEN.includes(c.status);
const shownStatus = c => (c.cancelled ? 'cancelled' : c.status);

// span is a window's start and end in plant time, the end's date left
// out when it is the start's.
function span(o, tz) {
  const a = fmtUtc(o.start, tz), b = fmtUtc(o.end, tz);
  return `${a} – ${b.slice(0, 10) === a.slice(0, 10) ? b.slice(11) : b}`;
}

// recurrence: a recurring command's rule in words and its next windows.
function recurrence(c, tz) {
  if (!c.repeat) return null;
  const rule = [`${c.cancelled ? 'repeated' : 'repeats'} ${repeatLabel(c.repeat)}`, `${durationLabel(c.duration)} each`,
    c.cancelled ? 'no further windows (cancelled)' : c.until ? `none starting from ${fmtUtc(c.until, tz)}` : ''].filter(Boolean).join(', ');
  const next = c.next || [];
  return h('div', { class: 'repeat', 'data-repeat': c.repeat },
    h('span', { title: 'cron: ' + c.repeat }, rule),
    next.length ? h('div', null, 'next: ', h('ul', { class: 'next' }, next.map(o => h('li', { 'data-start': o.start }, span(o, tz))))) : null);
}

// writesTable: a window's writes, a row per point: device, model, point,
// value written and read back (a mismatch marked), and when.
function writesTable(writes, tz, none = 'No writes recorded.') {
  if (!writes?.length) return h('p', { class: 'muted none' }, none);
  const cell = (label, attrs, ...content) => h('td', { 'data-label': label, ...attrs }, ...content);
  return h('table', { class: 'audit' },
    h('thead', null, h('tr', null, ['Device', 'Model', 'Point', 'Written', 'Read back', 'At'].map(t => h('th', { scope: 'col' }, t)))),
    h('tbody', null, writes.flatMap(w => (w.points?.length ? w.points : [{ point: w.what }]).map(p =>
      h('tr', { 'data-device': w.deviceId, 'data-point': p.point, 'data-value': p.value ?? '', 'data-readback': p.readBack ?? '' },
        cell('Device', null, w.deviceId), cell('Model', { class: 'num' }, w.model), cell('Point', null, p.point),
        cell('Written', { class: 'num' }, p.value ?? ''),
        cell('Read back', { class: 'num' + (p.readBack !== undefined && p.readBack !== p.value ? ' differs' : '') }, p.readBack ?? '–'),
        cell('At', { class: 'time' }, fmtUtc(w.readBackAt, tz)))))));
}

// audit: what a window wrote, and for a recurring command each of its
// ended windows with its status and writes (include=finished).
function audit(c, tz) {
  const none = c.status === 'pending' ? (c.cancelled ? 'Cancelled before its start: nothing written.' : 'Not begun yet.') : undefined;
  const parts = [h('div', { class: 'audit-window' }, h('strong', null, 'This window: '), writesTable(c.writes, tz, none))];
  for (const o of c.finished || []) {
    parts.push(h('div', { class: 'audit-window finished', 'data-start': o.start },
      h('strong', null, `Ended window ${span(o, tz)}: `), badge(o.status), o.late ? ' late' : '',
      o.appliedAt ? ` applied ${fmtUtc(o.appliedAt, tz)}` : '', o.reason ? ` (${o.reason})` : '', writesTable(o.writes, tz)));
  }
  return parts;
}

// scheduleRows: a row per window, newest schedule first; a schedule with
// an open window has a Cancel button in its first row when cancel is set.
// With all, finished windows too, each followed by its audit.
function scheduleRows(list, tz, all, cancel) {
  const rows = [];
  for (const s of [...list].sort((a, b) => b.createdAt.localeCompare(a.createdAt))) {
    let button = cancel && s.commands.some(isOpen) ? cancel(s) : null;
    for (const c of s.commands) {
      if (!all && (c.cancelled || FINISHED.includes(c.status))) continue;
      const cell = (label, attrs, ...content) => h('td', { 'data-label': label, ...attrs }, ...content);
      const status = shownStatus(c);
      rows.push(h('tr', { 'data-schedule': s.scheduleId, 'data-command': c.command, 'data-status': c.status, 'data-value': c.value ?? '',
        'data-cancelled': c.cancelled ? 'true' : null, 'data-created-by': s.createdBy || '' },
        cell('Command', { title: c.command }, h('span', null, commandLabel(c.command), h('br'), h('span', { class: 'muted sched-id' }, 'schedule ', h('code', null, s.scheduleId)))), cell('Start', { class: 'time' }, fmtUtc(c.start, tz)), cell('End', { class: 'time' }, fmtUtc(c.end, tz)),
        cell('Value', null, valueOf(c)), cell('Status', null, h('span', null, badge(status), c.late ? ' late' : '')),
        cell('Notes', { class: 'muted' }, h('div', null, [c.overriddenBy ? `overridden by ${c.overriddenBy}, which governs now` : '', partialNote(c), c.reason, c.appliedAt ? 'applied ' + fmtUtc(c.appliedAt, tz) : ''].filter(Boolean).join('; '),
          recurrence(c, tz))),
        cell('Sent by', { class: 'origin' }, h('div', null, h('span', { class: 'by', title: s.createdBy || '' }, originLabel(s.createdBy)), h('span', { class: 'muted' }, ' ' + fmtUtc(s.createdAt, tz)))),
        cell('Action', null, button)));
      button = null;
      if (all) rows.push(h('tr', { class: 'audit', 'data-schedule': s.scheduleId, 'data-command': c.command }, h('td', { colspan: 8, 'data-label': 'Audit' }, audit(c, tz))));
    }
  }
  return rows;
}

export async function render(ctx, root) {
  const { plantId, tz } = ctx;
  const base = `/gridcontrol/v1/plants/${encodeURIComponent(plantId)}`;
  const showAll = h('input', { type: 'checkbox', id: 'sched-all' });
  const tbody = h('tbody', { id: 'sched-body' });
  const schedStatus = h('div');
  const schedResult = h('div', { id: 'sched-result', 'aria-live': 'polite' });
  const roleNote = h('p', { class: 'muted', id: 'sched-role', hidden: true }, 'Cancelling a schedule needs the installer or grid-operator role; you are signed in with a lower one.');
  const now = await ctx.plantNow();
  const cmd = h('select', { id: 'gc-command', name: 'command' },
    ['opModMaxLimW', 'FeedInLimit'].map(c => h('option', { value: c, title: c }, commandLabel(c))));
  const value = h('input', { id: 'gc-value', name: 'value', type: 'number', min: '0', max: '100', step: '1', value: '60', required: true });
  const start = h('input', { id: 'gc-start', name: 'start', type: 'datetime-local', value: localInput(now + 60e3, tz), required: true });
  const end = h('input', { id: 'gc-end', name: 'end', type: 'datetime-local', value: localInput(now + 3600e3, tz), required: true });
  const result = h('div', { id: 'gc-result', 'aria-live': 'polite' });
  const form = h('form', { class: 'inline', id: 'gc-form', novalidate: true },
    h('div', { class: 'wide' }, h('label', { for: 'gc-command' }, 'Command'), cmd),
    h('div', null, h('label', { for: 'gc-value' }, 'Limit (% of rated power)'), value),
    h('div', null, h('label', { for: 'gc-start' }, `Start (plant time, ${tz})`), start),
    h('div', null, h('label', { for: 'gc-end' }, 'End (plant time)'), end),
    h('div', null, h('button', { type: 'submit', class: 'primary' }, 'Create limit window')));
  root.append(h('h1', null, 'Grid control'),
    h('section', { class: 'card', 'aria-labelledby': 'sched-h' }, h('h2', { id: 'sched-h' }, 'Schedules'),
      h('p', null, h('label', null, showAll, ' also show finished and superseded windows, with what each window wrote')), roleNote, schedResult, schedStatus,
      h('div', { class: 'scroll' }, h('table', { id: 'sched-table' },
        h('thead', null, h('tr', null, ['Command', 'Start', 'End', 'Value', 'Status', 'Notes', 'Sent by', 'Action'].map(t => h('th', { scope: 'col' }, t)))), tbody))),
    h('section', { class: 'card', 'aria-labelledby': 'new-h' }, h('h2', { id: 'new-h' }, 'New limit window (installer)'),
      h('p', { class: 'muted' }, 'Where windows of one command overlap, the newest of a role wins: this overwrites your older windows for its time. A grid operator\'s limit still holds where it is tighter (your window then shows overridden).'), form, result),
    h('p', { class: 'muted' }, 'The settings in effect on the inverters: see ', h('a', { href: '#/settings' }, 'Settings'),
      '. The grid operator\'s signals (ripple-control receiver, control box): see ', h('a', { href: '#/operator' }, 'Grid operator'), '.'));

  let timer, stopped = false, last = [], canCancel = false, confirming = null;
  // cancelButton: Cancel, then Confirm (a second click), then DELETE; the
  // answer in schedResult, the list read again. A refusal (403: a grid
  // operator's schedule, cancelled by a grid operator only) shows the
  // problem's title and detail.
  const cancelButton = s => h('button', { type: 'button', class: 'cancel' + (confirming === s.scheduleId ? ' confirm' : ''), 'data-schedule': s.scheduleId,
    'aria-label': `${confirming === s.scheduleId ? 'Confirm: cancel' : 'Cancel'} schedule ${s.scheduleId}`,
    onclick: async ev => {
      if (confirming !== s.scheduleId) {
        confirming = s.scheduleId;
        paint();
        tbody.querySelector('button.cancel.confirm')?.focus(); // the keyboard stays on it
        return;
      }
      confirming = null;
      ev.target.disabled = true;
      clear(schedResult);
      try {
        await del(`${base}/schedules/${encodeURIComponent(s.scheduleId)}`);
        clear(schedResult, h('p', { role: 'status', id: 'sched-cancelled', 'data-schedule': s.scheduleId }, `Schedule ${s.scheduleId} (${commandLabel(s.commands[0]?.command)}) cancelled: its windows end now.`));
      } catch (e) {
        const p = e.problem || {};
        clear(schedResult, h('div', { class: 'problem', role: 'alert', id: 'cancel-problem', 'data-schedule': s.scheduleId, 'data-status': e.status },
          `Schedule ${s.scheduleId} not cancelled: ${[p.title || `HTTP ${e.status}`, p.detail || p.message].filter(Boolean).join(': ')}`));
      }
      await loadSchedules();
    } }, confirming === s.scheduleId ? 'Confirm cancel' : 'Cancel');
  const paint = () => {
    const rows = scheduleRows(last, tz, showAll.checked, canCancel ? cancelButton : null);
    clear(tbody, rows);
    clear(schedStatus, rows.length ? null : h('p', { class: 'muted', id: 'sched-none' }, showAll.checked ? 'No schedules.' : 'No active or upcoming windows.'));
  };
  // loadSchedules reads the list (with the audit when finished windows
  // are shown); only the latest of overlapping reads paints.
  let reads = 0;
  async function loadSchedules() {
    const seq = ++reads;
    try {
      const r = await get(base + '/schedules', showAll.checked ? { include: 'finished' } : undefined);
      if (stopped || seq !== reads) return;
      last = r.schedules;
      paint();
    } catch (e) {
      if (stopped || seq !== reads) return;
      clear(schedStatus, problemBox(e));
    }
    clearTimeout(timer);
    if (!stopped) timer = setTimeout(loadSchedules, REFRESH_MS);
  }
  showAll.addEventListener('change', loadSchedules);
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
  // Cancelling needs the installer role or above (no buttons below it;
  // when the probe cannot tell, the API decides); which schedules a role
  // may cancel the API decides too (a 403 shown on the button's answer).
  const may = await mayInstall(plantId);
  canCancel = may !== false;
  roleNote.hidden = may !== false;
  await loadSchedules();

  return () => { stopped = true; clearTimeout(timer); };
}
