// Settings: the four settings types of grid control
// (GET /gridcontrol/v1/plants/{id}/settings/{settingsType}) as the
// inverters report them now, in words: what each type is about, each
// configuration (function) on or off, and per inverter its value or curve
// read out. The API's type names stay beside the words as captions.
import { get } from './api.js';
import { h, clear, problemBox } from './util.js';
import { settingsLabel, configLabel, SETTINGS, SETTINGS_ABOUT, FUNCTIONS, curveLabel } from './labels.js';

const TYPES = Object.keys(SETTINGS);

// functionOf: which function a configuration is, in words: the answer's
// function (its active form's name), else told by its SunSpec models (two
// reactive-power configurations can share a type name).
function functionOf(cf) {
  if (cf.function) return configLabel(cf.function); // the answer's name of it, in words
  if (!cf.type.startsWith('ReactivePowerGrid')) return '';
  const fs = [...new Set((cf.values || []).map(v => FUNCTIONS[v.model]).filter(Boolean))];
  return fs.length === 1 ? fs[0] : '';
}

// valueWords: one inverter's value of a configuration in words.
function valueWords(cf, v) {
  if (v.limitPct !== undefined) return `limit ${v.limitPct} % of rated power`;
  if (v.powerFactor !== undefined) return `power factor ${v.powerFactor}`;
  if (v.curve) return curveLabel(cf.type, v.curve);
  return '–';
}

function configBlock(cf) {
  const fn = functionOf(cf);
  const title = configLabel(cf.type);
  const state = cf.active ? h('span', { class: 'badge s-active' }, 'on') : h('span', { class: 'badge s-Off' }, 'off');
  return h('div', { class: 'config', 'data-type': cf.type, 'data-active': String(!!cf.active) },
    h('h3', null, fn && !title.toLowerCase().includes(fn.toLowerCase()) ? `${title}: ${fn.toLowerCase()}` : title, ' ', state,
      cf.supported ? '' : h('span', { class: 'muted' }, ' (no inverter offers it)')),
    h('p', { class: 'api-name' }, h('code', null, cf.type)),
    h('table', { class: 'stack' },
      h('thead', null, h('tr', null, ['Inverter', 'Switched on', 'Value', 'Set by plantd', 'SunSpec model'].map(t => h('th', { scope: 'col' }, t)))),
      h('tbody', null, (cf.values || []).map(v => h('tr', { 'data-device': v.device },
        h('td', { 'data-label': 'Inverter' }, v.device),
        h('td', { 'data-label': 'Switched on' }, v.enabled ? 'yes' : 'no'),
        h('td', { 'data-label': 'Value', class: 'words' }, valueWords(cf, v)),
        h('td', { 'data-label': 'Set by plantd' }, v.controlledByPlantd ? 'yes' : 'no, the inverter\'s own'),
        h('td', { 'data-label': 'SunSpec model', class: 'num' }, v.model ?? '–'))))));
}

// typeBlock: one settings type, headed in words, its configurations.
function typeBlock(r) {
  const on = r.configurations.filter(c => c.active).length;
  return h('section', { class: 'card settings', 'data-type': r.settingsType },
    h('h2', null, settingsLabel(r.settingsType), ' ', h('code', { class: 'api-name' }, r.settingsType)),
    h('p', { class: 'muted' }, SETTINGS_ABOUT[r.settingsType] ?? ''),
    h('p', { class: 'summary' }, on ? `${on} of ${r.configurations.length} functions on.` : `All ${r.configurations.length} functions off.`),
    h('details', { open: window.matchMedia('(min-width: 700px)').matches || undefined },
      h('summary', null, 'Each function per inverter'), r.configurations.map(configBlock)));
}

export async function render(ctx, root) {
  const base = `/gridcontrol/v1/plants/${encodeURIComponent(ctx.plantId)}/settings/`;
  const list = h('div', { id: 'settings' }, h('p', { class: 'muted' }, 'Reading the inverters…'));
  root.append(h('h1', null, 'Settings'),
    h('p', { class: 'muted' }, 'The grid settings as the inverters report them now: what the grid operator\'s rules ask of them. ',
      'Grid control changes some of them for a while (see Grid control); the others are set on the inverter.'), list);
  const blocks = await Promise.all(TYPES.map(t => get(base + t).then(typeBlock, e => h('section', { class: 'card settings', 'data-type': t },
    h('h2', null, settingsLabel(t), ' ', h('code', { class: 'api-name' }, t)), problemBox(e)))));
  if (ctx.active()) clear(list, blocks);
}
