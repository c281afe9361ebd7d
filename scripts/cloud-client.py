#!/usr/bin/env python3
"""A client written for the cloud API (SMA-style Monitoring API), pointed at plantd.

Uses only the Python 3 standard library and no plantd code: gets a token with
OAuth2 client_credentials, lists plants and devices, picks the inverter by
type == "Solar Inverters", reads PowerAc/Day and the plant's EnergyBalance/Day
with WithTotal=true, and parses `time` as plant-local time (the plant's IANA
zone). Exits non-zero on any mismatch.

  scripts/cloud-client.py --base http://127.0.0.1:8080 [--auth URL] \
      --client-id cloud --client-secret cloud-secret [--date 2025-06-21]
"""
import argparse
import datetime as dt
import json
import sys
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
    req = urllib.request.Request(url, data=data, headers=h)
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            body = resp.read()
            return resp.status, resp.headers, json.loads(body) if body else None
    except urllib.error.HTTPError as e:
        body = e.read()
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
    end = start + dt.timedelta(days=1)
    prev = None
    for r in rows:
        t = parse_local(r["time"], zone)
        check(start <= t < end, f"{set_type}: time {r['time']} outside the plant-local day {day}")
        check(prev is None or t > prev, f"{set_type}: times not increasing at {r['time']}")
        prev = t
        for k, v in r.items():
            check(v is not None, f"{set_type}: {k} is null at {r['time']}")
    check(any(f in r for r in rows for f in fields), f"{set_type}: none of {fields} present")
    return rows


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

    if failures:
        print(f"{len(failures)} mismatch(es)", file=sys.stderr)
        sys.exit(1)
    print("OK")


if __name__ == "__main__":
    main()
