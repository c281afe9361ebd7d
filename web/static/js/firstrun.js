// The first-run notice: a plant without devices (the package's config
// starts with none) says how to add them, as plantd's status line does.
import { get } from './api.js';
import { h } from './util.js';

export function firstRunNotice() {
  return h('section', { class: 'card', id: 'first-run', role: 'status' },
    h('h2', null, 'No devices configured'),
    h('p', null, 'On the gateway, run ', h('code', null, 'plantd scan HOST'), ' to find a device, add it under ',
      h('code', null, 'devices:'), ' in ', h('code', null, '/etc/plantd/plantd.yaml'), ' (examples in ',
      h('code', null, '/usr/share/doc/plantd/plantd.yaml.example'), '), then run ', h('code', null, 'systemctl reload plantd'), '.'));
}

// addFirstRunNotice puts the notice before `before` when the plant has no
// devices; errors stay with the view's own requests.
export async function addFirstRunNotice(plantId, before) {
  try {
    const r = await get(`/monitoring/v1/plants/${encodeURIComponent(plantId)}/devices`);
    if (!r.devices?.length && before.isConnected) before.before(firstRunNotice());
  } catch { /* the view shows the API's problem */ }
}
