// The page's shell: sign-in, plant choice, hash routing between views.
import { credential, signIn, signOut, get, ApiError } from './api.js';
import { clear, problemBox, h, localToMs } from './util.js';
import * as overview from './overview.js';
import * as devices from './devices.js';
import * as consumers from './consumers.js';
import * as history from './history.js';
import * as logs from './logs.js';
import * as grid from './grid.js';
import * as consents from './consents.js';
import * as operator from './operator.js';
import * as settings from './settings.js';

const views = { overview, devices, consumers, history, logs, grid, operator, settings, consents };
const $ = id => document.getElementById(id);
const state = { plants: [], plant: null, stop: null, seq: 0 };

function showSignIn(message) {
  stopView();
  clear($('view'));
  $('nav').hidden = $('sign-out').hidden = $('plant-select').hidden = true;
  $('plant-name').textContent = '';
  $('signin').hidden = false;
  const err = $('signin-error');
  err.hidden = !message;
  err.textContent = message || '';
  (credKind() === 'client' ? $('client-id') : $('token')).focus();
}

// consumersNav shows the Consumers entry only for a plant that has some.
async function consumersNav(p) {
  const a = document.querySelector('#nav a[data-view=consumers]');
  let n = 0;
  try { n = (await consumers.listConsumers(p.plantId)).length; } catch { /* hidden */ }
  if (p === state.plant) a.hidden = n === 0;
}

function credKind() { return document.querySelector('input[name=kind]:checked').value; }

function stopView() {
  if (state.stop) { try { state.stop(); } catch { /* a view's cleanup never blocks the next */ } }
  state.stop = null;
}

async function start(plants) {
  state.plants = plants.plants || [];
  if (!state.plants.length) { showSignIn('This gateway serves no plant.'); return; }
  const want = sessionStorage.getItem('plantd.plant');
  state.plant = state.plants.find(p => p.plantId === want) || state.plants[0];
  const sel = $('plant-select');
  clear(sel, state.plants.map(p => h('option', { value: p.plantId, selected: p === state.plant }, p.name)));
  sel.hidden = state.plants.length < 2;
  $('signin').hidden = true;
  $('nav').hidden = $('sign-out').hidden = false;
  $('plant-name').textContent = state.plant.name;
  if (plants.partial) $('plant-name').textContent += ' (partial: ' + plants.partial.reason + ')';
  consumersNav(state.plant);
  if (!location.hash.startsWith('#/')) location.hash = '#/overview';
  else route();
}

// plantNow is the gateway's clock as its latest live values show it (the
// demo may run a simulated clock; a browser's clock may be off), else the
// browser's.
async function plantNow(p) {
  try {
    const r = await get(`/live/v1/plants/${encodeURIComponent(p.plantId)}/measurements/sets/EnergyBalance`);
    if (r.set?.[0]?.time) return localToMs(r.set[0].time, p.timezone);
  } catch { /* the browser's clock */ }
  return Date.now();
}

function route() {
  if (!state.plant) return;
  const name = (location.hash.slice(2).split('?')[0]) || 'overview';
  const view = views[name] || overview;
  for (const a of document.querySelectorAll('#nav a')) {
    if (a.dataset.view === name) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
  }
  stopView();
  const root = clear($('view'));
  root.dataset.view = name;
  const seq = ++state.seq;
  const ctx = { plant: state.plant, tz: state.plant.timezone, plantId: state.plant.plantId, active: () => seq === state.seq,
    plantNow: () => plantNow(state.plant) };
  document.title = 'plantd · ' + (document.querySelector(`#nav a[data-view="${name}"]`)?.textContent || '');
  Promise.resolve(view.render(ctx, root)).then(stop => {
    if (seq === state.seq) state.stop = stop; else if (stop) stop();
  }).catch(e => { if (seq === state.seq) root.append(problemBox(e)); });
}

$('signin-form').addEventListener('submit', async ev => {
  ev.preventDefault();
  const kind = credKind();
  const c = kind === 'client'
    ? { kind, clientId: $('client-id').value.trim(), secret: $('client-secret').value }
    : { kind, token: $('token').value.trim() };
  if ((kind === 'token' && !c.token) || (kind === 'client' && (!c.clientId || !c.secret))) {
    showSignIn('Enter the credential first.');
    return;
  }
  try {
    const plants = await signIn(c);
    $('token').value = $('client-secret').value = '';
    await start(plants);
  } catch (e) {
    showSignIn(e instanceof ApiError && (e.status === 401 || e.status === 400)
      ? 'Not accepted by the gateway: ' + e.message : 'Sign-in failed: ' + e.message);
  }
});
for (const r of document.querySelectorAll('input[name=kind]')) {
  r.addEventListener('change', () => {
    $('token-fields').hidden = credKind() !== 'token';
    $('client-fields').hidden = credKind() !== 'client';
  });
}
$('sign-out').addEventListener('click', () => { signOut(); state.plant = null; showSignIn(); });
$('plant-select').addEventListener('change', ev => {
  state.plant = state.plants.find(p => p.plantId === ev.target.value);
  sessionStorage.setItem('plantd.plant', state.plant.plantId);
  $('plant-name').textContent = state.plant.name;
  consumersNav(state.plant);
  route();
});
window.addEventListener('hashchange', route);
window.addEventListener('plantd:unauthorized', () => { signOut(); state.plant = null; showSignIn('The gateway no longer accepts this credential; sign in again.'); });

if (credential()) {
  get('/monitoring/v1/plants').then(start, e => showSignIn(e.status === 401 ? '' : e.message));
} else {
  showSignIn();
}
