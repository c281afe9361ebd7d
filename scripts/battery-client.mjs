#!/usr/bin/env node
// scripts/battery-client.mjs: a JavaScript client of the cloud API (the
// SMA-style Monitoring API), pointed at plantd. It does what a public
// script for the cloud does to show a home battery's state of charge
// (written from the requests that script makes and the fields it reads,
// none of its code copied): an OAuth2 client_credentials token, the
// back-channel consent of the plant's owner (POST /oauth2/v2/bc-authorize,
// polled until Accepted), the device list, the first device of type
// "Battery Inverter", its device object (GET /monitoring/v1/devices/{id})
// and set[0].batteryStateOfCharge of its EnergyAndPowerBattery/Recent.
//
// Node 18 or newer (global fetch), no packages. With --plantd (the plantd
// binary) and PLANTD_TOKEN (installer role) the owner approves the consent
// with `plantd consent approve`, as on the gateway; without, the client
// must be pre-approved. Exits non-zero on any mismatch.
//
//   node scripts/battery-client.mjs --base http://127.0.0.1:8080 \
//       --client-id demo --client-secret SECRET [--plantd ./plantd]

import { execFileSync } from "node:child_process";
import { parseArgs } from "node:util";

const { values: args } = parseArgs({
  options: {
    base: { type: "string", default: "http://127.0.0.1:8080" },
    "client-id": { type: "string", default: "cloud" },
    "client-secret": { type: "string", default: "cloud-secret" },
    plantd: { type: "string" },
    "login-hint": { type: "string", default: `owner-${process.pid}@example.com` },
  },
});
const base = args.base.replace(/\/+$/, "");

function fail(msg) {
  console.error(`battery-client: ${msg}`);
  process.exit(1);
}

async function call(method, path, { token, form, json } = {}) {
  const headers = {};
  let body;
  if (token) headers.Authorization = `Bearer ${token}`;
  if (form) {
    headers["Content-Type"] = "application/x-www-form-urlencoded";
    body = new URLSearchParams(form).toString();
  }
  if (json) {
    headers["Content-Type"] = "application/json";
    body = JSON.stringify(json);
  }
  const res = await fetch(base + path, { method, headers, body });
  const text = await res.text();
  let data;
  try {
    data = JSON.parse(text);
  } catch {
    fail(`${method} ${path}: ${res.status}, not JSON: ${text.slice(0, 200)}`);
  }
  if (res.status !== 200) fail(`${method} ${path}: ${res.status} ${text.slice(0, 300)}`);
  return data;
}

const tok = await call("POST", "/oauth2/token", {
  form: { grant_type: "client_credentials", client_id: args["client-id"], client_secret: args["client-secret"] },
});
if (typeof tok.access_token !== "string" || tok.token_type?.toLowerCase() !== "bearer") fail(`token answer ${JSON.stringify(tok)}`);
const token = tok.access_token;

// The owner's consent, asked over the back channel and polled.
const hint = args["login-hint"];
let bc = await call("POST", "/oauth2/v2/bc-authorize", { token, json: { loginHint: hint } });
const poll = `/oauth2/v2/bc-authorize/${encodeURIComponent(hint)}`;
for (let i = 0; bc.state === "Pending" && i < 100; i++) {
  if (i === 0 && args.plantd) {
    const env = { ...process.env };
    const listed = JSON.parse(execFileSync(args.plantd, ["consent", "list", "--json", "--url", base], { env }).toString());
    const c = (listed.consents || []).find((c) => c.state === "Pending" && c.loginHint === hint);
    if (!c) fail(`plantd consent list: no pending consent for ${hint}`);
    execFileSync(args.plantd, ["consent", "approve", c.id, "--url", base], { env });
  }
  await new Promise((r) => setTimeout(r, 100));
  bc = await call("GET", poll, { token });
}
if (bc.state !== "Accepted") fail(`consent of ${hint}: ${bc.state}, want Accepted`);

const plants = await call("GET", "/monitoring/v1/plants", { token });
const plantId = plants.plants?.[0]?.plantId;
if (!plantId) fail("no plant");
const devs = await call("GET", `/monitoring/v1/plants/${encodeURIComponent(plantId)}/devices`, { token });
const bat = devs.devices.find((d) => d.type === "Battery Inverter");
if (!bat) fail('no device of type "Battery Inverter"');
const dev = await call("GET", `/monitoring/v1/devices/${encodeURIComponent(bat.deviceId)}`, { token });
if (dev.details?.deviceId !== bat.deviceId) fail(`device object ${JSON.stringify(dev)}`);
const rec = await call("GET", `/monitoring/v1/devices/${encodeURIComponent(bat.deviceId)}/measurements/sets/EnergyAndPowerBattery/Recent`, { token });
const soc = rec.set?.[0]?.batteryStateOfCharge;
if (rec.set?.length !== 1 || typeof soc !== "number") fail(`Recent: ${JSON.stringify(rec.set)}`);
console.log(`battery-client.mjs: consent of ${hint} Accepted; ${bat.deviceId} (${dev.details.product ?? bat.product}) state of charge ${soc} % at ${rec.set[0].time}`);
