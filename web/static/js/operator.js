// Grid operator: the grid operator's own signals at the plant
// (GET /gateway/v1/inputs): each input's contacts as last read, what they
// ask for and whether it is in force in grid control, the pattern table
// and failsafe; and the control box's §14a dimming of the consumers.
import { get } from './api.js';
import { h, clear, fmtUtc, problemBox, relative } from './util.js';
import { actionLabel, commandLabel, statusLabel } from './labels.js';

const REFRESH_MS = 2000;
const READ = { Ok: 'Reads', Lost: 'Not answering', NotReadYet: 'Not read yet' };

const contactsWords = cs => (cs.length ? cs.join(' + ') : 'none');

// nowLine: what the contacts ask for now, and whether grid control holds it.
function nowLine(i, tz, now) {
  const since = i.sinceUtc ? ` since ${fmtUtc(i.sinceUtc, tz)} (${relative(Date.parse(i.sinceUtc), now)})` : '';
  const closed = i.closed.length ? `Contact${i.closed.length > 1 ? 's' : ''} ${i.closed.join(' + ')} closed${since}` : `All contacts open${since}`;
  const asks = i.invalidPattern
    ? `no pattern of the table: the strictest of their limits applies, ${actionLabel(i.action)}`
    : i.action ? `asks for ${actionLabel(i.action)}` : 'no limit asked for';
  const w = i.window;
  const held = w
    ? `grid control holds ${commandLabel(w.command).toLowerCase()}${w.value !== undefined ? ` at ${w.value} ${w.unit === 'W' ? 'W' : '%'}` : ''}` +
      `${w.status === 'active' ? '' : ` (${statusLabel(w.status)})`} until ${fmtUtc(w.endUtc, tz)}, renewed while the contacts hold`
    : 'grid control holds no limit of this input';
  return [h('p', { class: 'now' + (i.invalidPattern ? ' problem' : '') }, h('strong', null, closed), ': ', asks, '.'),
    h('p', { class: 'held', 'data-active': String(i.active) }, i.active ? h('span', { class: 'badge s-active' }, 'in force') : h('span', { class: 'badge s-Off' }, 'not in force'), ' ', held, '.')];
}

function contactChips(i) {
  return h('ul', { class: 'contacts', 'aria-label': 'Contacts as last read' }, i.contacts.map(c => h('li', {
    class: 'contact ' + (c.closed ? 'closed' : 'open'), 'data-contact': c.name, 'data-closed': String(c.closed),
    title: `input ${c.input}${c.dimming ? ', §14a dimming' : ''}` },
  h('strong', null, c.name), ' ', c.closed ? 'closed' : 'open', c.dimming ? ' (§14a)' : '')));
}

function table(i) {
  const current = i.action && !i.invalidPattern ? i.action.contacts?.join('+') : null;
  const rows = i.actions.map(a => h('tr', { class: a.contacts.join('+') === current ? 'current' : null, 'data-contacts': a.contacts.join('+') },
    h('td', { 'data-label': 'Closed' }, contactsWords(a.contacts)), h('td', { 'data-label': 'Means', title: `${a.command} ${a.value} ${a.unit}` }, actionLabel(a))));
  if (i.failsafe) {
    rows.push(h('tr', { class: 'failsafe' }, h('td', { 'data-label': 'Closed' }, 'input lost beyond its grace'),
      h('td', { 'data-label': 'Means' }, 'failsafe: ' + actionLabel(i.failsafe))));
  }
  return h('details', { class: 'pattern' }, h('summary', null, 'What each contact means'),
    h('table', { class: 'stack' }, h('thead', null, h('tr', null, h('th', { scope: 'col' }, 'Closed'), h('th', { scope: 'col' }, 'Means'))), h('tbody', null, rows)),
    h('p', { class: 'muted' }, 'No contact closed, or one meaning 100 %: no limit.'));
}

function inputCard(i, tz, now) {
  const read = i.status === 'Ok'
    ? `read ${relative(Date.parse(i.lastReadUtc), now)}`
    : i.status === 'Lost' ? `not answering since ${fmtUtc(i.lostSinceUtc, tz)}${i.lastError ? ': ' + i.lastError : ''}` : '';
  return h('section', { class: 'card input', id: 'input-' + i.inputId, 'data-input': i.inputId, 'data-status': i.status,
    'data-closed': i.closed.join('+'), 'data-active': String(i.active) },
  h('h2', null, i.name || i.inputId, ' ', h('span', { class: 'badge s-' + (i.status === 'Ok' ? 'Ok' : i.status === 'Lost' ? 'Error' : 'Off'), title: i.status }, READ[i.status] ?? i.status)),
  h('p', { class: 'muted' }, `Input ${i.inputId}, ${read}.`),
  contactChips(i), nowLine(i, tz, now), table(i));
}

function dimmingCard(d, tz, now) {
  if (!d) {
    return h('section', { class: 'card', id: 'dimming', 'data-dimmed': 'none' }, h('h2', null, 'Control box (§14a)'),
      h('p', null, 'No control box is wired to this gateway: the grid operator does not dim the consumers here.'));
  }
  const since = d.sinceUtc ? ` since ${fmtUtc(d.sinceUtc, tz)} (${relative(Date.parse(d.sinceUtc), now)})` : '';
  return h('section', { class: 'card', id: 'dimming', 'data-dimmed': String(d.dimmed) }, h('h2', null, 'Control box (§14a) ',
    d.dimmed ? h('span', { class: 'badge s-Warning' }, 'dimming') : h('span', { class: 'badge s-Ok' }, 'not dimming')),
  h('p', null, d.dimmed
    ? `The grid operator dims the controllable consumers${since}: together they draw at most the §14a minimum.`
    : `The consumers are free${since}.`),
  d.consumers ? null : h('p', { class: 'muted' }, 'This plant has no consumers: the signal is only logged.'),
  h('p', { class: 'muted' }, `Signalled by input ${d.inputs.join(', ')}.`));
}

// eebusCard is the control box over EEBus (§14a LPC and LPP): connected
// and trusted, the limits in force, the failsafe state.
function eebusCard(e, tz, now) {
  const kw = w => `${(w / 1000).toLocaleString(undefined, { maximumFractionDigits: 2 })} kW`;
  const beat = e.lastHeartbeatUtc ? ` Last heartbeat ${fmtUtc(e.lastHeartbeatUtc, tz)} (${relative(Date.parse(e.lastHeartbeatUtc), now)}).` : ' No heartbeat yet.';
  return h('section', { class: 'card', id: 'eebus', 'data-connected': String(e.connected), 'data-failsafe': String(e.failsafe) },
    h('h2', null, 'Control box over EEBus (§14a) ',
      h('span', { class: 'badge s-' + (e.connected ? 'Ok' : 'Error') }, e.connected ? 'connected' : 'not connected'),
      e.failsafe ? h('span', { class: 'badge s-Warning' }, 'failsafe') : null),
    h('p', null, e.consumptionLimitW == null ? 'No consumption limit: the controllable consumers are free.'
      : `Consumption limit ${kw(e.consumptionLimitW)} on the controllable consumers (never below the §14a minimum).`),
    h('p', null, e.productionLimitW == null ? 'No production limit.'
      : `Production limit ${kw(e.productionLimitW)}${e.productionWindow ? ` (schedule ${e.productionWindow})` : ''}.`),
    h('p', { class: 'muted' }, `Trusted control box ${e.controlBox}; plantd's SKI ${e.ski}.${beat}`));
}

export async function render(ctx, root) {
  const { plantId, tz } = ctx;
  const status = h('p', { class: 'muted', id: 'operator-status' });
  const body = h('div', { id: 'operator' });
  root.append(h('h1', null, 'Grid operator'),
    h('p', { class: 'muted' }, 'The grid operator\'s own signals at this plant: a ripple-control receiver\'s contacts limit the PV output; ',
      'a control box dims the controllable consumers (§14a EnWG). Their limits show in Grid control as the grid operator\'s schedules.'),
    status, body);
  let timer, stopped = false;
  async function tick() {
    try {
      const r = await get('/gateway/v1/inputs', { plantId });
      const now = await ctx.plantNow();
      if (stopped || !ctx.active()) return;
      const dim = r.dimming.find(d => d.plantId === plantId);
      // Without a dimming contact, the EEBus card is the control box's.
      const cards = [...(dim || !r.eebus ? [dimmingCard(dim, tz, now)] : []), ...r.inputs.map(i => inputCard(i, tz, now))];
      if (r.eebus) cards.unshift(eebusCard(r.eebus, tz, now));
      if (!r.inputs.length && !r.eebus) {
        cards.push(h('section', { class: 'card', id: 'inputs-none' }, h('h2', null, 'No inputs'),
          h('p', null, 'No ripple-control receiver or control box is wired to this gateway (config inputs:). The grid operator\'s limits then come over the API or the cloud only.')));
      }
      // A reader's open pattern table stays open across refreshes.
      const open = new Set([...body.querySelectorAll('details.pattern[open]')].map(d => d.closest('[data-input]')?.dataset.input));
      clear(body, cards);
      for (const d of body.querySelectorAll('details.pattern')) if (open.has(d.closest('[data-input]').dataset.input)) d.open = true;
      status.textContent = `${r.inputs.length} input${r.inputs.length === 1 ? '' : 's'}; refreshed every ${REFRESH_MS / 1000} s`;
    } catch (e) {
      if (!stopped) clear(body, problemBox(e));
    }
    if (!stopped) timer = setTimeout(tick, REFRESH_MS);
  }
  await tick();
  return () => { stopped = true; clearTimeout(timer); };
}
