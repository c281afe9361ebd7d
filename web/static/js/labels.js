// The page's vocabulary: what the API's field and type names mean to a
// person, and their units. Every view takes its words from here; the API
// name stays available next to them (data attributes, a code caption or a
// title) for comparing with the API.

// FIELDS: label and unit of each measurement-set field (sets carry no
// units; DESIGN §4). Unit 'energy': W as interval means in Day and Week,
// Wh in Month, Year and in totals (store/doc.go, Queries); 'rate': a ratio
// of 0..1 the page shows in %.
export const FIELDS = {
  // Plant: EnergyBalance and EnergyMix.
  pvGeneration: ['PV generation', 'energy'],
  totalGeneration: ['Total generation', 'energy'],
  totalConsumption: ['Consumption', 'energy'],
  gridConsumption: ['Grid purchase', 'energy'],
  gridFeedIn: ['Grid feed-in', 'energy'],
  batteryCharging: ['Battery charging', 'energy'],
  batteryDischarging: ['Battery discharging', 'energy'],
  batteryStateOfCharge: ['Battery state of charge', '%'],
  selfConsumption: ['PV used on site', 'energy'],
  directConsumption: ['PV consumed directly', 'energy'],
  selfSupply: ['Consumption not from the grid', 'energy'],
  dieselGeneration: ['Diesel generation', 'energy'],
  consumption: ['Consumption', 'energy'],
  autarkyRate: ['Autarky', 'rate'],
  selfConsumptionRate: ['Self-consumption rate', 'rate'],
  pvConsumptionRate: ['Consumption from PV', 'rate'],
  batteryConsumptionRate: ['Consumption from the battery', 'rate'],
  gridConsumptionRate: ['Consumption from the grid', 'rate'],
  // Devices: PowerAc.
  activePower: ['Active power', 'W'],
  activePowerPhaseA: ['Active power L1', 'W'],
  activePowerPhaseB: ['Active power L2', 'W'],
  activePowerPhaseC: ['Active power L3', 'W'],
  reactivePower: ['Reactive power', 'var'],
  reactivePowerPhaseA: ['Reactive power L1', 'var'],
  reactivePowerPhaseB: ['Reactive power L2', 'var'],
  reactivePowerPhaseC: ['Reactive power L3', 'var'],
  apparentPower: ['Apparent power', 'VA'],
  apparentPowerPhaseA: ['Apparent power L1', 'VA'],
  apparentPowerPhaseB: ['Apparent power L2', 'VA'],
  apparentPowerPhaseC: ['Apparent power L3', 'VA'],
  voltagePhaseA: ['Voltage L1', 'V'],
  voltagePhaseB: ['Voltage L2', 'V'],
  voltagePhaseC: ['Voltage L3', 'V'],
  voltagePhaseA2B: ['Voltage L1–L2', 'V'],
  voltagePhaseB2C: ['Voltage L2–L3', 'V'],
  voltagePhaseC2A: ['Voltage L3–L1', 'V'],
  currentPhaseA: ['Current L1', 'A'],
  currentPhaseB: ['Current L2', 'A'],
  currentPhaseC: ['Current L3', 'A'],
  gridFrequency: ['Grid frequency', 'Hz'],
  displacementPowerFactor: ['Power factor', ''],
  // PowerDc, EnergyDc (indexed per input: "DC power, input 1").
  dcPowerInput: ['DC power, input', 'W'],
  dcVoltageInput: ['DC voltage, input', 'V'],
  dcCurrentInput: ['DC current, input', 'A'],
  dcEnergyInput: ['DC energy, input', 'Wh'],
  isolationResistance: ['Isolation resistance', 'Ω'],
  // Battery (indexed per battery).
  batteryStateOfHealth: ['Battery state of health', '%'],
  batteryVoltage: ['Battery voltage, battery', 'V'],
  batteryCurrent: ['Battery current, battery', 'A'],
  batteryTemperature: ['Battery temperature, battery', '°C'],
  // Sensor.
  externalInsolation: ['Irradiance', 'W/m²'],
  ambientTemperature: ['Ambient temperature', '°C'],
  moduleTemperature: ['Module temperature', '°C'],
  windSpeed: ['Wind speed', 'm/s'],
  // Lifetime counters of the live API (GET /live/v1/devices/{id}: a
  // channel's name, the field plus "Total"); in sets they feed the field.
  pvGenerationTotal: ['PV generation, lifetime', 'Wh'],
  gridFeedInTotal: ['Grid feed-in, lifetime', 'Wh'],
  gridConsumptionTotal: ['Grid purchase, lifetime', 'Wh'],
  consumptionTotal: ['Consumption, lifetime', 'Wh'],
};

// SETS: the measurement sets (plant.SetType) in words.
export const SETS = {
  EnergyBalance: 'Energy balance',
  EnergyMix: 'Energy mix: where the consumption comes from',
  EnergyAndPowerPv: 'PV generation',
  EnergyAndPowerInOut: 'Grid: feed-in and purchase',
  EnergyAndPowerConsumption: 'Consumption',
  EnergyAndPowerBattery: 'Battery',
  PowerAc: 'AC side: power, voltage, current',
  PowerDc: 'DC side: PV inputs',
  EnergyDc: 'DC energy per PV input',
  Sensor: 'Weather sensor',
};
export const setLabel = t => SETS[t] ?? words(t);

// KINDS: a device's type as the API writes it, in words.
export const KINDS = {
  'Solar Inverters': 'PV inverter', 'Battery Inverter': 'Battery inverter', 'Energy Meter': 'Energy meter',
  'Monitoring and control': 'Monitoring and control', 'Sensor technology': 'Weather sensor', Consumer: 'Consumer', Unknown: 'Unknown kind',
};

// modelLabel: vendor and product, "—" for what the device does not tell.
export function modelLabel(vendor, product) {
  const known = x => x && x.toLowerCase() !== 'unknown';
  const parts = [vendor, product].filter(known);
  return parts.length ? parts.join(' ') : '—';
}

// COMMANDS: the grid-control commands in words (gridcontrol/commands.go).
export const COMMANDS = {
  FeedInLimit: 'Feed-in limit at the grid point',
  opModMaxLimW: 'Active power limit of the inverters',
  OpModDisconnect: 'Disconnect from the grid',
  opModFixedPfAbsorbW: 'Fixed power factor, absorbing',
  opModFixedPFInjectW: 'Fixed power factor, injecting',
  opModFreqWatt: 'Frequency-watt curve',
  opModVoltVar: 'Volt-var curve',
  opModVoltWatt: 'Volt-watt curve',
  opModHfrtMustTrip: 'High-frequency ride-through (must trip)',
  opModLfrtMustTrip: 'Low-frequency ride-through (must trip)',
  opModHvrtMustTrip: 'High-voltage ride-through (must trip)',
  opModLvrtMustTrip: 'Low-voltage ride-through (must trip)',
};
export const commandLabel = c => COMMANDS[c] ?? words(c || '–');

// STATUSES: a schedule window's status in words.
export const STATUSES = {
  pending: 'upcoming', active: 'in force', overridden: 'overridden', done: 'ended', superseded: 'replaced',
  failed: 'failed', cancelled: 'cancelled',
};
export const statusLabel = s => STATUSES[s] ?? s;

// actionLabel: an input's action ("opModMaxLimW 30 %") in words.
export function actionLabel(a) {
  if (!a) return 'no limit';
  if (a.unit === '%' && a.value >= 100) return 'no limit (100 %)';
  const what = a.command === 'FeedInLimit' ? 'feed-in at most' : 'inverters at most';
  return `${what} ${a.value} ${a.unit === '%' ? '% of rated power' : a.unit}`;
}

// UNITS names the quantity of a unit for an axis.
export const UNITS = { W: 'Power (W)', Wh: 'Energy (Wh)', '%': 'Percent (%)', V: 'Voltage (V)', A: 'Current (A)',
  var: 'Reactive power (var)', VA: 'Apparent power (VA)', Hz: 'Frequency (Hz)', '°C': 'Temperature (°C)',
  'W/m²': 'Irradiance (W/m²)', 'm/s': 'Wind speed (m/s)', 'Ω': 'Resistance (Ω)', '': 'Ratio' };

// words turns an unknown camelCase name into words ("fooBarBaz" → "Foo bar baz").
const words = n => n.replace(/([a-z0-9])([A-Z])/g, '$1 $2').replace(/^./, c => c.toUpperCase())
  .replace(/ ([A-Z])(?=[a-z])/g, (_, c) => ' ' + c.toLowerCase());

// fieldLabel: the words for a field, "name.index" for an input of an
// indexed field.
export function fieldLabel(name) {
  const [f, index] = name.split('.');
  const l = FIELDS[f]?.[0] ?? words(f);
  return index === undefined ? l.replace(/, (input|battery)$/, '') : `${l} ${index}`;
}

export const isEnergy = name => FIELDS[name.split('.')[0]]?.[1] === 'energy';
export const isRate = name => FIELDS[name.split('.')[0]]?.[1] === 'rate';

// fieldUnit: the unit a field's values have in a period (Day, Week, Month,
// Year; 'Total' for a period's total). Rates: % (the page scales them).
export function fieldUnit(name, period) {
  const u = FIELDS[name.split('.')[0]]?.[1];
  if (u === undefined) return '';
  if (u === 'energy') return period === 'Day' || period === 'Week' ? 'W' : 'Wh';
  if (u === 'rate') return '%';
  return u;
}

// withUnit: "PV generation (W)".
export const withUnit = (label, unit) => (unit ? `${label} (${unit})` : label);

// SETTINGS: the grid-control settings types and their configurations
// (gridcontrol/settings.go). A configuration no inverter has enabled is
// answered in its Deactivated form, a ride-through curve as DeviceDefault.
export const SETTINGS = {
  activePowerGridSettings: 'Active power',
  reactivePowerGridSettings: 'Reactive power',
  frequencyFaultRideThroughSettings: 'Frequency ride-through',
  voltageFaultRideThroughSettings: 'Voltage ride-through',
};
export const CONFIGS = {
  DynamicActivePowerLimit: 'Dynamic active power limit (feed-in limit)',
  FixedActivePowerLimit: 'Fixed active power limit',
  FreqWattCurve: 'Frequency-watt curve',
  VoltWattCurve: 'Volt-watt curve',
  FixedPowerFactor: 'Fixed power factor',
  VoltVarCurve: 'Volt-var curve',
  ReactivePowerGrid: 'Reactive power control',
  LowFrequencyRideThroughCurve: 'Low-frequency ride-through curve',
  HighFrequencyRideThroughCurve: 'High-frequency ride-through curve',
  LowVoltageRideThroughCurve: 'Low-voltage ride-through curve',
  HighVoltageRideThroughCurve: 'High-voltage ride-through curve',
  LowFrequencyRideThrough: 'Low-frequency ride-through',
  HighFrequencyRideThrough: 'High-frequency ride-through',
  LowVoltageRideThrough: 'Low-voltage ride-through',
  HighVoltageRideThrough: 'High-voltage ride-through',
};

export const settingsLabel = t => SETTINGS[t] ?? words(t);

// SETTINGS_ABOUT says what each settings type is about, for an owner.
export const SETTINGS_ABOUT = {
  activePowerGridSettings: 'How far the inverters may be held below their full power: limits and the curves that lower power when frequency or voltage run high.',
  reactivePowerGridSettings: 'How the inverters help hold the grid voltage with reactive power: a fixed power factor or a volt-var curve.',
  frequencyFaultRideThroughSettings: 'How long the inverters stay connected while the grid frequency is out of range, before they must disconnect.',
  voltageFaultRideThroughSettings: 'How long the inverters stay connected while the grid voltage is out of range, before they must disconnect.',
};

// FUNCTIONS: which function a configuration is (the settings answer's
// function, or told by the SunSpec model: two reactive-power configs
// share a type name).
export const FUNCTIONS = { 123: 'Fixed power factor', 704: 'Fixed power factor', 126: 'Volt-var curve', 705: 'Volt-var curve' };

// CURVES: what a curve's points mean per configuration (x and y with
// their units) and the DER frequency-droop parameters in words.
export const CURVES = {
  FreqWattCurve: ['Hz', '% power'],
  VoltWattCurve: ['% voltage', '% power'],
  VoltVarCurve: ['% voltage', '% reactive power'],
  ReactivePowerGrid: ['% voltage', '% reactive power'],
  LowFrequencyRideThroughCurve: ['s', 'Hz'],
  HighFrequencyRideThroughCurve: ['s', 'Hz'],
  LowVoltageRideThroughCurve: ['s', '% voltage'],
  HighVoltageRideThroughCurve: ['s', '% voltage'],
};
export const CURVE_PARAMS = {
  DbOf: ['dead band above nominal frequency', 'Hz'], DbUf: ['dead band below nominal frequency', 'Hz'],
  KOf: ['droop above nominal', ''], KUf: ['droop below nominal', ''], PMin: ['minimum power', '%'], RspTms: ['response time', 's'],
};

// curveLabel: a curve's points or parameters in words for a configuration
// type: "50.2 Hz → 100 % power, 51.5 Hz → 0 % power".
export function curveLabel(type, curve) {
  const m = /^(.*?)(Deactivated)?(Config|Setting|DeviceDefault)$/.exec(type || '');
  const [xu, yu] = CURVES[m ? m[1] : type] ?? ['', ''];
  const u = (v, unit) => `${v}${unit ? (unit.startsWith('%') ? ' ' : ' ') + unit : ''}`;
  if (curve?.points) {
    if (xu === 's') return curve.points.map(p => `${u(p.y, yu)} for ${u(p.x, 's')}`).join(', ');
    return curve.points.map(p => `${u(p.x, xu)} → ${u(p.y, yu)}`).join(', ');
  }
  if (curve?.params) return Object.entries(curve.params).map(([k, v]) => { const [l, pu] = CURVE_PARAMS[k] ?? [words(k), '']; return `${l} ${u(v, pu)}`; }).join(', ');
  return '';
}

// configLabel: the words for a configuration type, its state left to the
// page's active/inactive badge: "FixedActivePowerLimitDeactivatedConfig"
// → "Fixed active power limit", "LowVoltageRideThroughDeviceDefault" →
// "Low-voltage ride-through, device default".
export function configLabel(type) {
  const m = /^(.*?)(Deactivated)?(Config|Setting|DeviceDefault)$/.exec(type);
  const base = m ? CONFIGS[m[1]] ?? words(m[1]) : words(type);
  return m?.[3] === 'DeviceDefault' ? base + ', device default' : base;
}

// Consumers (GET /gateway/v1/consumers): the reasons of the home energy
// manager in words, the SG-Ready states (Bundesverband Wärmepumpe's
// label) and the modes.
export const REASONS = {
  Surplus: 'On: PV surplus',
  NoSurplus: 'Off: not enough PV surplus',
  Probing: 'Off: waits its turn to try curtailed PV',
  NoMeter: 'Off: no grid meter answers',
  MustRun: 'On: must-run window',
  Manual: 'Set by hand (mode On or Off)',
  MinOnTime: 'Held on: minimum on time',
  MinOffTime: 'Held off: minimum off time',
  MaxSwitches: 'Held: switchings per hour used up',
  Offline: 'Device not answering',
  Starting: 'Starting: no decision yet',
  Dimmed: 'Limited: dimmed by the grid operator (§14a)',
  MinPV: 'Charging at its minimum: the surplus carries no more',
  EnableDelay: 'Waiting: the surplus must hold for the start delay',
  DisableDelay: 'At its minimum: stops when the surplus stays gone for the stop delay',
  NoVehicle: 'No car plugged in',
};
export const reasonLabel = r => REASONS[r] ?? (r ? words(r) : '–');

// The day-ahead plan's battery action of a slot (GET /gateway/v1/plan).
export const BATTERY_ACTIONS = {
  hold: 'hold (no discharge)', keepRoom: 'hold, room kept for PV', chargePV: 'charge from PV', chargeGrid: 'charge from the grid', discharge: 'discharge',
};
export const batteryActionLabel = a => BATTERY_ACTIONS[a] ?? (a ? words(a) : '–');

export const SG_READY = { 1: 'Locked', 2: 'Normal', 3: 'Recommended', 4: 'Forced' };
export const sgReadyLabel = s => (SG_READY[s] ? `${s} ${SG_READY[s]}` : String(s));

export const MODES = {
  Auto: 'Auto: PV surplus and must-run windows decide',
  On: 'On: held on by hand',
  Off: 'Off: held off by hand',
};

// A charger's modes, in evcc's words (Now is On, PV is Auto).
export const CHARGER_MODES = {
  Auto: 'PV: charge on surplus only',
  MinPV: 'Min+PV: the minimum current always, more with surplus',
  On: 'Now: the maximum current',
  Off: 'Off: no charging',
};

export const DRIVERS = { relay: 'Relay output', sgready: 'SG-Ready heat pump', shelly: 'Shelly plug or relay', ocpp: 'EV charger (OCPP)' };

// Grid control: who sent a schedule (its createdBy, "name (role)") and a
// recurring command's rule (a cron spec of five fields, robfig/cron's
// standard parser, optionally after CRON_TZ=<zone>) in words.
export const ROLES = { standard: 'standard', installer: 'installer', gridoperator: 'grid operator' };

// originLabel: "input:rcr/K3 (gridoperator)" → "grid operator's input rcr,
// contact K3"; "mqtt:gw (installer)" → "cloud over MQTT (gateway gw,
// installer)"; a credential's name with its role in words otherwise.
export function originLabel(createdBy) {
  const m = /^(.*?)(?: \((\w+)\))?$/.exec(createdBy || '');
  const name = m[1], role = m[2] ? ROLES[m[2]] ?? m[2] : '';
  const input = /^input:([^/]+)\/(.+)$/.exec(name);
  if (input) {
    const [, id, src] = input;
    if (src === 'failsafe') return `grid operator's input ${id}: failsafe (input device lost)`;
    const k = src.split('+');
    return `grid operator's input ${id}, contact${k.length > 1 ? 's' : ''} ${k.join(' + ')}`;
  }
  const cloud = /^mqtt:(.+)$/.exec(name);
  if (cloud) return `cloud over MQTT (gateway ${cloud[1]}${role ? ', ' + role : ''})`;
  if (!name) return '–';
  return role ? `${name} (${role})` : name;
}

const DOW = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'];
const DOW_NAMES = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];
const dayOf = t => (/^\d+$/.test(t) ? DOW[+t] : DOW[DOW_NAMES.indexOf(t.toUpperCase())]);

// daysLabel: a day-of-week field ("1-5", "MON,WED", "0,6") in words, or
// undefined for one with steps or unknown names.
function daysLabel(f) {
  const out = [];
  for (const part of f.split(',')) {
    const [a, b, more] = part.split('-');
    const from = dayOf(a), to = b === undefined ? from : dayOf(b);
    if (more !== undefined || !from || !to) return undefined;
    out.push(b === undefined ? from : `${from}–${to}`);
  }
  return out.join(', ');
}

const pad2 = n => String(n).padStart(2, '0');

// repeatLabel: a cron spec in words for the common shapes ("every day at
// 11:00 (Europe/Berlin)", "Mon–Fri at 06:30 (UTC)", "every 15 minutes"),
// else the spec itself.
export function repeatLabel(spec) {
  const z = /^(?:CRON_TZ|TZ)=(\S+)\s+(.*)$/.exec(spec.trim());
  const zone = z ? z[1] : 'UTC';
  const f = (z ? z[2] : spec).trim().split(/\s+/);
  const raw = `cron “${spec}”`;
  if (f.length !== 5) return raw;
  const [mi, ho, dom, mon, dow] = f;
  const num = x => /^\d+$/.test(x);
  const at = num(mi) && num(ho) ? `at ${pad2(ho)}:${pad2(mi)} (${zone})` : '';
  if (at && mon === '*') {
    if (dom === '*' && dow === '*') return 'every day ' + at;
    if (dom === '*' && daysLabel(dow)) return `every ${daysLabel(dow)} ${at}`;
    if (num(dom) && dow === '*') return `on day ${dom} of every month ${at}`;
  }
  if ([dom, mon, dow].every(x => x === '*')) {
    if (num(mi) && ho === '*') return `every hour at minute ${mi}`;
    const step = /^\*\/(\d+)$/.exec(mi);
    if (step && ho === '*') return `every ${step[1]} minutes`;
  }
  return raw;
}

// durationLabel: a Go duration ("4h", "1h30m0s", "90s") in words.
export function durationLabel(d) {
  const units = { h: 'h', m: 'min', s: 's', ms: 'ms' };
  const parts = [...(d || '').matchAll(/(\d+(?:\.\d+)?)(ms|h|m|s)/g)].filter(([, n]) => +n !== 0).map(([, n, u]) => `${n} ${units[u]}`);
  return parts.length ? parts.join(' ') : d;
}
