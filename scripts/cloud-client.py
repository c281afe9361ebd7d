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
    listed set's Day with ReturnEnergyValues for the EnergyAndPower* sets, `time`
    parsed as a LocalDateTime in the plant's zone, and its EnergySpike check
    (no five-minute pvGeneration above generatorPower * 5/60 Wh);
  - a script that finds the "Battery Inverter", reads GET /v1/devices/{id}
    and set[0].batteryStateOfCharge of EnergyAndPowerBattery/Recent;
  - a dashboard reading batteryStateOfCharge, batteryDischarging,
    totalConsumption and totalGeneration from the plant's EnergyBalance
    Day, Total and Recent with WithTotal=true (v1 and v2).
With --plantd (the plantd binary) and PLANTD_TOKEN (a token of the
installer role) it also runs the other flows of the cloud's auth server, the
owner deciding each consent with `plantd consent` as on the gateway:
  - authorization_code with PKCE S256: the authorize URL, `plantd consent
    list` and `approve`, the redirect's code and state, the exchange with
    HTTP Basic client auth, a read with the token;
  - refresh_token: rotated on use; the spent one and a revoked one
    (POST /oauth2/revoke, RFC 7009) refused with invalid_grant;
  - the back-channel consent POST /oauth2/v2/bc-authorize, polled from
    Pending to Accepted (`plantd consent approve`) and to Rejected
    (`plantd consent reject`).
Exits non-zero on any mismatch.

  scripts/cloud-client.py --base http://127.0.0.1:8080 [--auth URL] \
      --client-id cloud --client-secret cloud-secret [--date 2025-06-21] \
      [--plantd ./plantd --redirect-uri http://127.0.0.1:8765/callback]
"""
import argparse
import base64
import datetime as dt
import hashlib
import json
import os
import secrets
import subprocess
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
# them it asks with ReturnEnergyValues=true (its EnergyAndPower* sets; EnergyDc and EnergyMix get false).
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
            energy = "true" if name.startswith("EnergyAndPower") else "false"
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


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


def raw(url, data=None, headers=None, basic=None, method=None):
    """One request, no redirects followed, errors returned: status, headers, JSON (or None)."""
    h = dict(headers or {})
    if basic:
        # RFC 6749 §2.3.1: client id and secret form-encoded, then Basic.
        pair = urllib.parse.quote(basic[0], safe="") + ":" + urllib.parse.quote(basic[1], safe="")
        h["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
    opener = urllib.request.build_opener(NoRedirect)
    for attempt in range(10):
        req = urllib.request.Request(url, data=data, headers=h, method=method)
        try:
            with opener.open(req, timeout=10) as resp:
                status, hdrs, body = resp.status, resp.headers, resp.read()
        except urllib.error.HTTPError as e:
            status, hdrs, body = e.code, e.headers, e.read()
        if status != 429 or attempt == 9:
            break
        time.sleep(float(hdrs.get("Retry-After") or 1))  # rate-limited: wait as told
    try:
        js = json.loads(body) if body else None
    except ValueError:
        js = None
    return status, hdrs, js


FORM = {"Content-Type": "application/x-www-form-urlencoded"}


def form(d):
    return urllib.parse.urlencode(d).encode()


def consent(plantd, base, verb, *args):
    """Runs `plantd consent VERB` as the gateway's owner does."""
    out = subprocess.run([plantd, "consent", verb, *args, "--url", base], capture_output=True, text=True, timeout=30)
    check(out.returncode == 0, f"plantd consent {verb} {args}: exit {out.returncode}: {out.stderr.strip()}")
    return out.stdout


def pending_consent(plantd, base, client_id, **match):
    listed = json.loads(consent(plantd, base, "list", "--json") or "{}").get("consents", [])
    for c in listed:
        if c["clientId"] == client_id and c["state"] == "Pending" and all(c.get(k) == v for k, v in match.items()):
            return c
    check(False, f"plantd consent list: no pending request of {client_id} {match}: {listed}")
    return None


def oauth_error(status, body, want_status, want_error, what):
    check(status == want_status and isinstance(body, dict) and body.get("error") == want_error,
          f"{what}: {status} {body}, want {want_status} {want_error}")


def code_flow(base, auth, client_id, secret, redirect_uri, plantd):
    """authorization_code with PKCE, approved with plantd consent; then refresh and revocation."""
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    state = secrets.token_urlsafe(12)
    q = urllib.parse.urlencode({"response_type": "code", "client_id": client_id, "redirect_uri": redirect_uri,
                                "state": state, "scope": "offline_access",
                                "code_challenge": challenge, "code_challenge_method": "S256"})
    status, hdrs, _ = raw(f"{auth}/oauth2/auth?{q}")
    if not check(status == 200, f"authorize: status {status}, want the waiting page"):
        return
    c = pending_consent(plantd, base, client_id, kind="authorization_code", redirectUri=redirect_uri)
    if not c:
        return
    check(c["id"] == hdrs.get("X-Consent-Id"), "the listed request is not the browser's")
    status, _, _ = raw(f"{auth}/oauth2/auth/{c['id']}")
    check(status == 200, f"before approval the page waits, got {status}")
    consent(plantd, base, "approve", c["id"])
    status, hdrs, _ = raw(f"{auth}/oauth2/auth/{c['id']}")
    loc = urllib.parse.urlsplit(hdrs.get("Location") or "")
    rq = urllib.parse.parse_qs(loc.query)
    if not check(status == 302 and f"{loc.scheme}://{loc.netloc}{loc.path}" == redirect_uri and "code" in rq,
                 f"after approval: {status} to {hdrs.get('Location')}"):
        return
    check(rq.get("state") == [state], "state not returned")
    code = rq["code"][0]
    exchange = {"grant_type": "authorization_code", "code": code, "redirect_uri": redirect_uri, "code_verifier": verifier}
    status, _, tok = raw(f"{auth}/oauth2/token", form(exchange), FORM, basic=(client_id, secret))
    if not check(status == 200 and tok.get("refresh_token") and tok.get("token_type") == "Bearer",
                 f"code exchange: {status} {tok}"):
        return
    check("offline_access" in tok.get("scope", "").split(), f"scope {tok.get('scope')}")
    status, _, plants = raw(f"{base}/monitoring/v1/plants", headers={"Authorization": "Bearer " + tok["access_token"]})
    check(status == 200 and plants.get("plants"), f"read with the code flow's token: {status}")
    # refresh_token, rotated on use.
    r1 = tok["refresh_token"]
    status, _, tok2 = raw(f"{auth}/oauth2/token", form({"grant_type": "refresh_token", "refresh_token": r1}), FORM,
                          basic=(client_id, secret))
    if not check(status == 200 and tok2.get("refresh_token") not in (None, r1), f"refresh: {status} {tok2}"):
        return
    status, _, _ = raw(f"{base}/monitoring/v1/plants", headers={"Authorization": "Bearer " + tok2["access_token"]})
    check(status == 200, f"read with the refreshed token: {status}")
    # Revocation (RFC 7009), then the revoked and the spent refresh token.
    r2 = tok2["refresh_token"]
    status, _, _ = raw(f"{auth}/oauth2/revoke", form({"token": r2, "token_type_hint": "refresh_token"}), FORM,
                       basic=(client_id, secret))
    check(status == 200, f"revoke: {status}")
    status, _, body = raw(f"{auth}/oauth2/token", form({"grant_type": "refresh_token", "refresh_token": r2}), FORM,
                          basic=(client_id, secret))
    oauth_error(status, body, 400, "invalid_grant", "refresh with a revoked token")
    status, _, body = raw(f"{auth}/oauth2/token", form({"grant_type": "refresh_token", "refresh_token": r1}), FORM,
                          basic=(client_id, secret))
    oauth_error(status, body, 400, "invalid_grant", "refresh with a rotated (spent) token")
    status, _, _ = raw(f"{base}/monitoring/v1/plants", headers={"Authorization": "Bearer " + tok2["access_token"]})
    check(status == 401, f"the revoked grant's access token still reads: {status}")
    # The code used again (RFC 6749 §4.1.2: refused, its grant revoked).
    status, _, body = raw(f"{auth}/oauth2/token", form(exchange), FORM, basic=(client_id, secret))
    oauth_error(status, body, 400, "invalid_grant", "the code used twice")
    status, _, body = raw(f"{auth}/oauth2/token", form({"grant_type": "client_credentials"}), FORM,
                          basic=(client_id, secret + "x"))
    oauth_error(status, body, 401, "invalid_client", "wrong secret")
    print(f"code flow: consent {c['id'][:8]}… approved with plantd consent, code exchanged with PKCE S256 and HTTP Basic, "
          f"refresh rotated, spent and revoked refresh tokens refused")


def back_channel_flow(base, auth, token, plantd):
    """POST /oauth2/v2/bc-authorize, polled while the owner decides with plantd consent."""
    hdr = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}
    seen = []
    run = secrets.token_hex(3)  # a fresh owner per run: a decided consent stays decided
    for hint, verb, final in ((f"owner-{run}@example.com", "approve", "Accepted"), (f"other-{run}@example.com", "reject", "Rejected")):
        status, _, bc = raw(f"{base}/oauth2/v2/bc-authorize", json.dumps({"loginHint": hint}).encode(), hdr)
        if not check(status == 200 and bc.get("state") == "Pending", f"bc-authorize {hint}: {status} {bc}"):
            return
        poll = f"{base}/oauth2/v2/bc-authorize/{urllib.parse.quote(hint, safe='')}"
        status, _, bc = raw(poll, headers=hdr)
        check(status == 200 and bc.get("state") == "Pending", f"poll before the decision: {bc}")
        c = pending_consent(plantd, base, bc["clientId"], kind="bc-authorize", loginHint=hint)
        if not c:
            return
        consent(plantd, base, verb, c["id"])
        status, _, bc = raw(poll, headers=hdr)
        check(status == 200 and bc.get("state") == final, f"poll after plantd consent {verb}: {bc}, want {final}")
        seen.append(f"{hint}: Pending → {bc.get('state')}")
    print("back-channel consent: " + "; ".join(seen))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", default="http://127.0.0.1:8080")
    ap.add_argument("--auth", help="OAuth2 base URL (default: --base)")
    ap.add_argument("--client-id", default="cloud")
    ap.add_argument("--client-secret", default="cloud-secret")
    ap.add_argument("--date", help="YYYY-MM-DD (default: today in the plant's zone)")
    ap.add_argument("--plantd", help="the plantd binary: also run the code flow, refresh and the back-channel consent, "
                                     "deciding consents with `plantd consent` (needs PLANTD_TOKEN, installer role)")
    ap.add_argument("--redirect-uri", default="http://127.0.0.1:8765/callback", help="the client's redirect URI")
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

    if a.plantd:
        if not check(os.environ.get("PLANTD_TOKEN"), "--plantd needs PLANTD_TOKEN (installer role) for plantd consent"):
            sys.exit(1)
        auth = (a.auth or base).rstrip("/")
        code_flow(base, auth, a.client_id, a.client_secret, a.redirect_uri, a.plantd)
        back_channel_flow(base, auth, token, a.plantd)

    if failures:
        print(f"{len(failures)} mismatch(es)", file=sys.stderr)
        sys.exit(1)
    print("OK")


if __name__ == "__main__":
    main()
