#!/usr/bin/env python3
"""A client written for the cloud API (SMA-style Monitoring API), pointed at plantd.

Uses only the Python 3 standard library and no plantd code: gets a token with
OAuth2 client_credentials, lists plants and devices, picks the inverter by
type == "Solar Inverters", reads PowerAc/Day and the plant's EnergyBalance/Day
with WithTotal=true, and parses `time` as plant-local time (the plant's IANA
zone) labelling the END of each five-minute interval (00:05 .. next day 00:00).
Then it replays, request by request, the flows of three public clients of the
cloud API (written from what their public code calls and reads, none of it
copied):
  - SolarNetwork's SMA integration: the bare plant for its time zone,
    devices/lean?WithDeactivatedDevices=true, each device's set list, every
    listed set's Day with ReturnEnergyValues for the Energy* sets, `time`
    parsed as a LocalDateTime in the plant's zone, and its EnergySpike check
    (no five-minute pvGeneration above generatorPower * 5/60 Wh);
  - a script that finds the "Battery Inverter", reads GET /v1/devices/{id}
    and set[0].batteryStateOfCharge of EnergyAndPowerBattery/Recent;
  - a dashboard reading batteryStateOfCharge, batteryDischarging,
    totalConsumption and totalGeneration from the plant's EnergyBalance
    Day, Total and Recent with WithTotal=true (v1 and v2).
Exits non-zero on any mismatch.

  scripts/cloud-client.py --base http://127.0.0.1:8080 [--auth URL] \
      --client-id cloud --client-secret cloud-secret [--date 2025-06-21]
"""
import argparse
import datetime as dt
import json
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from zoneinfo import ZoneInfo

failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("MISMATCH:", msg, file=sys.stderr)
    return cond


def request(url, token=None, data=None, headers=None):
    h = dict(headers or {})
    if token:
        h["Authorization"] = "Bearer " + token
    for attempt in range(10):
        req = urllib.request.Request(url, data=data, headers=h)
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                body = resp.read()
                return resp.status, resp.headers, json.loads(body) if body else None
        except urllib.error.HTTPError as e:
            body = e.read()
            if e.code == 429 and attempt < 9:
                # Rate-limited, as the cloud does too: wait as told.
                time.sleep(float(e.headers.get("Retry-After") or 1))
                continue
            print(f"HTTP {e.code} for {url}: {body[:400]!r}", file=sys.stderr)
            sys.exit(2)


def get_token(auth, client_id, secret):
    form = urllib.parse.urlencode({"grant_type": "client_credentials",
                                   "client_id": client_id, "client_secret": secret}).encode()
    status, _, tok = request(auth.rstrip("/") + "/oauth2/token", data=form,
                             headers={"Content-Type": "application/x-www-form-urlencoded"})
    check(tok.get("token_type") == "Bearer", f"token_type {tok.get('token_type')!r}")
    check(isinstance(tok.get("expires_in"), int) and tok["expires_in"] > 0, "expires_in")
    check(bool(tok.get("access_token")), "access_token missing")
    return tok["access_token"]


def parse_local(s, zone):
    """`time` is plant-local without offset: YYYY-MM-DDTHH:mm:ss."""
    t = dt.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S")
    return t.replace(tzinfo=zone)


def check_set(body, set_type, zone, day, fields):
    check(body.get("setType") == set_type, f"setType {body.get('setType')!r} != {set_type}")
    check(body.get("plant", {}).get("timezone") == str(zone), "plant.timezone")
    rows = body.get("set")
    if not check(isinstance(rows, list) and rows, f"{set_type}: empty set"):
        return
    start = dt.datetime.combine(day, dt.time(), tzinfo=zone)
    end = dt.datetime.combine(day + dt.timedelta(days=1), dt.time(), tzinfo=zone)
    prev = None
    for r in rows:
        t = parse_local(r["time"], zone)
        # Each row carries the end of its interval: 00:05 .. next day 00:00.
        check(start < t <= end, f"{set_type}: time {r['time']} outside the plant-local day {day} (00:05 .. next 00:00)")
        check(prev is None or t > prev, f"{set_type}: times not increasing at {r['time']}")
        prev = t
        for k, v in r.items():
            check(v is not None, f"{set_type}: {k} is null at {r['time']}")
    check(any(f in r for r in rows for f in fields), f"{set_type}: none of {fields} present")
    return rows


# The measurement-set names SolarNetwork's SMA integration knows, and which of
# them it asks with ReturnEnergyValues=true (its Energy* sets).
SN_SETS = ["EnergyAndPowerPv", "EnergyAndPowerInOut", "EnergyAndPowerConsumption",
           "EnergyAndPowerBattery", "PowerAc", "PowerDc", "EnergyDc", "EnergyMix", "Sensor"]
SN_RESOLUTIONS = {"OneMinute": 60, "FiveMinutes": 300, "FifteenMinutes": 900, "OneHour": 3600,
                  "OneDay": 86400, "OneMonth": None, "OneYear": None}


def q(s):
    return urllib.parse.quote(s, safe="")


def solarnetwork_flow(base, token, pid, day):
    """SolarNetwork's SmaCloudDatumStreamService, one plant day."""
    _, _, bare = request(f"{base}/monitoring/v1/plants/{q(pid)}", token)
    check(set(bare) <= {"plantId", "name", "description", "timezone"} and "timezone" in bare,
          f"bare plant object {bare}")
    zone = ZoneInfo(bare["timezone"])
    _, _, lean = request(f"{base}/monitoring/v1/plants/{q(pid)}/devices/lean?WithDeactivatedDevices=true", token)
    check("plant" not in lean, "devices/lean has a plant wrapper")
    rows_read, spikes, sets_read = 0, 0, 0
    start = dt.datetime.combine(day, dt.time(), tzinfo=zone)
    end = dt.datetime.combine(day + dt.timedelta(days=1), dt.time(), tzinfo=zone)
    for d in lean["devices"]:
        check(isinstance(d.get("productId", 0), int), f"{d['deviceId']}: productId {d.get('productId')!r} not a number")
        if "deactivatedAt" in d:
            dt.datetime.strptime(d["deactivatedAt"], "%Y-%m-%dT%H:%M:%S")  # LocalDateTime
        _, _, sl = request(f"{base}/monitoring/v1/devices/{q(d['deviceId'])}/measurements/sets", token)
        for name in sl["sets"]:
            if not check(name in SN_SETS, f"{d['deviceId']}: set {name} unknown to SolarNetwork"):
                continue
            energy = "true" if name.startswith("Energy") else "false"
            _, _, body = request(f"{base}/monitoring/v1/devices/{q(d['deviceId'])}/measurements/sets/{name}/Day"
                                 f"?Date={day.isoformat()}&ReturnEnergyValues={energy}", token)
            sets_read += 1
            res = body.get("resolution")
            check(res in SN_RESOLUTIONS, f"{name}: resolution {res!r} unknown to SolarNetwork")
            max_wh = None
            if d.get("generatorPower") and SN_RESOLUTIONS.get(res):
                max_wh = d["generatorPower"] * SN_RESOLUTIONS[res] / 3600
            for r in body["set"]:
                ts = dt.datetime.strptime(r["time"], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=zone)
                # SolarNetwork keeps start < ts <= next midnight for a day.
                check(start < ts <= end, f"{name}: {r['time']} outside the day as SolarNetwork reads it")
                rows_read += 1
                gen = r.get("pvGeneration")
                if energy == "true" and max_wh is not None and isinstance(gen, (int, float)) and gen > max_wh * 1.01:
                    spikes += 1
                    check(False, f"{d['deviceId']} {name} {r['time']}: pvGeneration {gen} Wh above {max_wh:.0f} (EnergySpike)")
    check(sets_read > 0, "SolarNetwork flow read no set")
    print(f"SolarNetwork flow: {len(lean['devices'])} devices, {sets_read} sets, {rows_read} rows, {spikes} energy spikes")


def battery_script_flow(base, token, pid):
    """A script that reads the battery's state of charge."""
    _, _, devs = request(f"{base}/monitoring/v1/plants/{q(pid)}/devices", token)
    bats = [d for d in devs["devices"] if d["type"] == "Battery Inverter"]
    if not check(bats, "no device of type 'Battery Inverter'"):
        return
    _, _, one = request(f"{base}/monitoring/v1/devices/{q(bats[0]['deviceId'])}", token)
    check(one.get("details", {}).get("deviceId") == bats[0]["deviceId"], f"device object {one}")
    _, _, rec = request(f"{base}/monitoring/v1/devices/{q(bats[0]['deviceId'])}/measurements/sets/EnergyAndPowerBattery/Recent", token)
    rows = rec.get("set") or []
    check(len(rows) == 1, f"Recent has {len(rows)} rows, want 1")
    soc = rows[0].get("batteryStateOfCharge") if rows else None
    check(isinstance(soc, (int, float)), f"set[0].batteryStateOfCharge {soc!r}")
    print(f"battery script: {bats[0]['deviceId']} state of charge {soc} at {rows[0]['time'] if rows else '-'}")


def dashboard_flow(base, token, pid, day):
    """A dashboard on the plant's energy balance."""
    fields = ["batteryStateOfCharge", "batteryDischarging", "totalConsumption", "totalGeneration"]
    for version in ("v1", "v2"):
        for period, extra in (("Day", f"&Date={day.isoformat()}"), ("Total", ""), ("Recent", "")):
            _, _, eb = request(f"{base}/monitoring/{version}/plants/{q(pid)}/measurements/sets/EnergyBalance/{period}"
                               f"?WithTotal=true{extra}", token)
            rows = eb.get("set") or []
            if not check(rows, f"{version} EnergyBalance/{period}: no rows"):
                continue
            total = eb.get("total")
            check(isinstance(total, dict), f"{version} EnergyBalance/{period}: no total")
            latest = rows[-1] if period != "Recent" else rows[0]
            have = [f for f in fields if f in latest or (total and f in total)]
            check(len(have) == len(fields), f"{version} EnergyBalance/{period}: lacks {set(fields) - set(have)}")
            if period == "Recent":
                check(len(rows) == 1, f"{version} EnergyBalance/Recent has {len(rows)} rows")
    print("dashboard: EnergyBalance Day, Total and Recent with WithTotal on v1 and v2")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", default="http://127.0.0.1:8080")
    ap.add_argument("--auth", help="OAuth2 base URL (default: --base)")
    ap.add_argument("--client-id", default="cloud")
    ap.add_argument("--client-secret", default="cloud-secret")
    ap.add_argument("--date", help="YYYY-MM-DD (default: today in the plant's zone)")
    a = ap.parse_args()
    base = a.base.rstrip("/")
    token = get_token(a.auth or base, a.client_id, a.client_secret)

    _, _, plants = request(base + "/monitoring/v1/plants", token)
    if not check(plants.get("plants"), "no plants"):
        return
    p = plants["plants"][0]
    pid, zone = p["plantId"], ZoneInfo(p["timezone"])
    print(f"plant {pid} {p['name']!r} in {zone}")

    _, _, devs = request(f"{base}/monitoring/v1/plants/{urllib.parse.quote(pid)}/devices", token)
    inverters = [d for d in devs["devices"] if d["type"] == "Solar Inverters"]
    if not check(inverters, "no device of type 'Solar Inverters'"):
        return
    inv = inverters[0]
    print(f"inverter {inv['deviceId']} {inv.get('vendor')} {inv.get('product')}")

    day = dt.date.fromisoformat(a.date) if a.date else dt.datetime.now(zone).date()
    q = urllib.parse.urlencode({"Date": day.isoformat()})
    _, _, pac = request(f"{base}/monitoring/v1/devices/{urllib.parse.quote(inv['deviceId'])}"
                        f"/measurements/sets/PowerAc/Day?{q}", token)
    rows = check_set(pac, "PowerAc", zone, day, ["activePower"])
    if rows:
        peak = max((r.get("activePower", 0) for r in rows), default=0)
        print(f"PowerAc: {len(rows)} rows, resolution {pac.get('resolution')}, peak {peak:.0f} W")
        check(pac.get("resolution") == "FiveMinutes", f"PowerAc Day resolution {pac.get('resolution')}")

    q = urllib.parse.urlencode({"Date": day.isoformat(), "WithTotal": "true"})
    _, _, eb = request(f"{base}/monitoring/v1/plants/{urllib.parse.quote(pid)}"
                       f"/measurements/sets/EnergyBalance/Day?{q}", token)
    rows = check_set(eb, "EnergyBalance", zone, day, ["pvGeneration", "gridFeedIn", "gridConsumption"])
    total = eb.get("total")
    if check(isinstance(total, dict), "EnergyBalance: total missing with WithTotal=true"):
        parse_local(total["time"], zone)
        print(f"EnergyBalance: {len(rows or [])} rows, total pvGeneration {total.get('pvGeneration')}")

    solarnetwork_flow(base, token, pid, day)
    battery_script_flow(base, token, pid)
    dashboard_flow(base, token, pid, day)

    if failures:
        print(f"{len(failures)} mismatch(es)", file=sys.stderr)
        sys.exit(1)
    print("OK")


if __name__ == "__main__":
    main()
