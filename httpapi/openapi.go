package httpapi

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"strings"
	"time"

	"plantd/gridcontrol"
	"plantd/httpapi/apidoc"
	"plantd/httpapi/oauth2"
)

// The OpenAPI 3.1 document of the API, built in code so that the route
// table and the document are kept together; openapi_test.go walks Gin's
// routes against it and validates real responses with kin-openapi.
//
// The binary serves the document as rendered at build time: renderOpenAPI
// writes it to openapi.json.gz (go generate ./httpapi), which is embedded,
// and TestOpenAPIGenerated fails while the file differs from what the code
// renders. The builder code and the schemas are thus only in the test
// binary: in plantd they took 365 KB, the compressed document takes 19 KB.

//go:generate go test -run ^TestOpenAPIGenerated$ . -update

//go:embed openapi.json.gz
var openapiGz []byte

// buildOpenAPI returns the document: the embedded rendering, decompressed.
func buildOpenAPI() ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(openapiGz))
	if err != nil {
		return nil, fmt.Errorf("embedded openapi.json.gz: %w", err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("embedded openapi.json.gz: %w", err)
	}
	return b, nil
}

func schemas() apidoc.Obj {
	indexed := apidoc.Arr(apidoc.Object(apidoc.Obj{"index": apidoc.Str(), "value": apidoc.Num()}, "index", "value"))
	setRow := apidoc.Obj{"type": "object", "required": []string{"time"},
		"properties":           apidoc.Obj{"time": apidoc.LocalTime()},
		"additionalProperties": apidoc.Obj{"oneOf": []any{apidoc.Num(), indexed}},
		"description":          "one interval; only measured fields are present"}
	balanceFields := apidoc.Obj{}
	for _, f := range []string{"pvGeneration", "gridFeedIn", "gridConsumption", "directConsumption", "selfConsumption",
		"selfSupply", "totalConsumption", "totalGeneration", "batteryCharging", "batteryDischarging",
		"batteryStateOfCharge", "dieselGeneration", "autarkyRate", "selfConsumptionRate"} {
		balanceFields[f] = apidoc.Num()
	}
	balanceFields["time"] = apidoc.LocalTime()
	mixFields := apidoc.Obj{"time": apidoc.LocalTime(), "pvConsumptionRate": apidoc.Num(), "batteryConsumptionRate": apidoc.Num(),
		"gridConsumptionRate": apidoc.Num(), "totalConsumption": apidoc.Num()}
	dataError := apidoc.Object(apidoc.Obj{"code": apidoc.Str(), "message": apidoc.Str(),
		"devices": apidoc.Arr(apidoc.Object(apidoc.Obj{"deviceId": apidoc.Str(), "reason": apidoc.Enum("Stale", "TimedOut", "Unreachable", "NoData", "NoValue")}, "deviceId", "reason"))},
		"code", "message", "devices")
	liveEnv := func(item apidoc.Obj, device bool) apidoc.Obj {
		props := apidoc.Obj{"plant": apidoc.Ref("Plant"), "setType": apidoc.Str(), "resolution": apidoc.Str(),
			"set":   apidoc.Obj{"type": "array", "items": item, "minItems": 1, "maxItems": 1},
			"error": apidoc.Obj{"oneOf": []any{apidoc.Obj{"type": "null"}, apidoc.Ref("DataError")}}}
		req := []string{"plant", "setType", "set", "error"}
		if device {
			props["device"] = apidoc.Ref("DeviceRef")
			req = append(req, "device")
		}
		return apidoc.Object(props, req...)
	}
	optNum := apidoc.Num()
	orientation := apidoc.Object(apidoc.Obj{"azimuth": apidoc.Obj{"type": "number", "minimum": 0, "maximum": 360}, "collectorSlope": apidoc.Obj{"type": "number", "minimum": 0, "maximum": 90}})
	installation := apidoc.Object(apidoc.Obj{
		"peakPower": optNum, "acNominalPower": apidoc.Num(),
		"calculatedAcNominalPower": apidoc.Describe(apidoc.Num(), "sum of the rated AC power of the active inverters, W"),
		"calcAcNominalPower":       apidoc.Describe(apidoc.Num(), "the same value under the cloud API's other name"),
		"dcPowerInputMax":          apidoc.Num(), "co2SavingsFactor": apidoc.Describe(apidoc.Num(), "g/kWh"),
		"startUpUtc": apidoc.NoOffsetTime("the start-up day, UTC, written without offset as the cloud does (2021-11-03T00:00:00)"), "orientation": orientation,
		"pvModuleAreas": apidoc.Describe(apidoc.Arr(apidoc.Object(apidoc.Obj{"name": apidoc.Str(), "azimuth": apidoc.Obj{"type": "number", "minimum": 0, "maximum": 360},
			"collectorSlope": apidoc.Num(), "peakPower": apidoc.Num(), "moduleCount": apidoc.Obj{"type": "integer"}}, "name")), "newer-platform plants only (modelled)"),
	}, "co2SavingsFactor")
	address := apidoc.Object(apidoc.Obj{"country": apidoc.Str(), "federalState": apidoc.Str(), "city": apidoc.Str(), "zipCode": apidoc.Str(), "street": apidoc.Str(),
		"streetNo": apidoc.Str(), "longitude": apidoc.Num(), "latitude": apidoc.Num()})
	logs := func(device bool) apidoc.Obj {
		props := apidoc.Obj{"logs": apidoc.Arr(apidoc.Object(apidoc.Obj{"time": apidoc.UTCTime(), "level": apidoc.Str(), "code": apidoc.Str(), "message": apidoc.Str(), "deviceId": apidoc.Str()},
			"time", "level", "code", "message")), "next": apidoc.Describe(apidoc.Str(), "cursor of the next page")}
		if device {
			props["device"] = apidoc.Ref("DeviceRef")
			return plantHead(props, "logs", "device")
		}
		return plantHead(props, "logs")
	}
	liveDevices := func(health []string) apidoc.Obj {
		return plantHead(apidoc.Obj{"devices": apidoc.Arr(apidoc.Object(apidoc.Obj{"deviceId": apidoc.Str(), "name": apidoc.Str(), "type": apidoc.Str(),
			"healthStatus": apidoc.Enum(health...), "lastUpdateUtc": apidoc.UTCTime(),
			"switchingState": apidoc.Describe(apidoc.Enum("On", "Off"), "consumer devices only: the output as last read; absent while the consumer is offline"),
			"consumption":    apidoc.Describe(apidoc.Num(), "consumer devices only: the power now, W, metered or estimated from the rated power (see GET /gateway/v1/consumers); absent when unknown or offline")},
			"deviceId", "name", "type", "healthStatus"))}, "devices")
	}
	s := apidoc.Obj{
		"Problem": apidoc.Object(apidoc.Obj{"type": apidoc.Str(), "title": apidoc.Str(), "status": apidoc.Obj{"type": "integer"}, "detail": apidoc.Str(),
			"instance": apidoc.Str(), "code": apidoc.Str(), "message": apidoc.Str(), "requestId": apidoc.Str(), "error": apidoc.Describe(apidoc.Str(), "OAuth2 error code (token endpoint)"),
			"errors": apidoc.Arr(apidoc.Object(apidoc.Obj{"field": apidoc.Str(), "message": apidoc.Str()}, "field", "message")),
			"reasons": apidoc.Describe(apidoc.Arr(apidoc.Object(apidoc.Obj{"command": apidoc.Str(), "code": apidoc.Str(), "message": apidoc.Str()}, "command", "code", "message")),
				"422 not-eligible: the eligibility reason of each refused command"),
			"retryable": apidoc.Describe(apidoc.Obj{"type": "boolean"},
				"422 not-eligible: every refusal is DevicesOffline or DevicesNotDiscovered (the same request may pass once the devices answer)")},
			"type", "title", "status", "code", "message"),
		"Plant":        apidoc.Object(apidoc.Obj{"plantId": apidoc.Str(), "name": apidoc.Str(), "description": apidoc.Str(), "timezone": apidoc.Describe(apidoc.Str(), "IANA time zone")}, "plantId", "name", "timezone"),
		"DeviceRef":    apidoc.Object(apidoc.Obj{"deviceId": apidoc.Str(), "name": apidoc.Str(), "timezone": apidoc.Str()}, "deviceId", "name", "timezone"),
		"Installation": installation,
		"PlantList": apidoc.Object(apidoc.Obj{
			"plants": apidoc.Arr(apidoc.Object(apidoc.Obj{"plantId": apidoc.Str(), "name": apidoc.Str(), "description": apidoc.Str(), "timezone": apidoc.Str(),
				"installation": apidoc.Ref("Installation"),
				"location":     apidoc.Object(apidoc.Obj{"currencyCode3": apidoc.Str(), "address": address})},
				"plantId", "name", "timezone", "installation")),
			"partial": apidoc.Describe(apidoc.Object(apidoc.Obj{"reason": apidoc.Str(), "missing": apidoc.Arr(apidoc.Enum("classic", "newer"))}, "reason", "missing"),
				"present when the devices of one platform generation are unreachable (plantd's)"),
		}, "plants"),
		"PlantInstallation": plantHead(apidoc.Obj{"installation": apidoc.Ref("Installation")}, "installation"),
		"Configuration": plantHead(apidoc.Obj{"plantWithBattery": apidoc.Bool(), "plantWithLiveData": apidoc.Bool(),
			"connectedService": apidoc.Object(apidoc.Obj{"status": apidoc.Str(), "since": apidoc.UTCTime()}, "status")},
			"plantWithBattery", "plantWithLiveData", "connectedService"),
		"Device": apidoc.Object(apidoc.Obj{"deviceId": apidoc.Str(), "name": apidoc.Str(), "timezone": apidoc.Str(),
			"type":    apidoc.Enum("Solar Inverters", "Battery Inverter", "Energy Meter", "Monitoring and control", "Sensor technology", "Consumer", "Unknown"),
			"product": apidoc.Str(), "productId": apidoc.Describe(apidoc.Obj{"type": "integer"}, "the vendor's product id, when configured"),
			"serial": apidoc.Str(), "vendor": apidoc.Str(), "generatorPower": apidoc.Num(), "generatorPowerDc": apidoc.Num(),
			"isActive": apidoc.Bool(), "deactivatedAt": apidoc.NoOffsetTime("plant-local time without offset, as the cloud sends it"),
			"isSmartConnectedReady": apidoc.Bool()},
			"deviceId", "name", "timezone", "type", "product", "vendor", "isActive", "isSmartConnectedReady"),
		"Devices":       plantHead(apidoc.Obj{"devices": apidoc.Arr(apidoc.Ref("Device"))}, "devices"),
		"DevicesLean":   apidoc.Object(apidoc.Obj{"devices": apidoc.Arr(apidoc.Ref("Device"))}, "devices"),
		"DeviceDetails": apidoc.Describe(plantHead(apidoc.Obj{"details": apidoc.Ref("Device")}, "details"), "the device's plant and its device object (modelled)"),
		"Stakeholders": plantHead(apidoc.Obj{"stakeholders": apidoc.Arr(apidoc.Object(apidoc.Obj{"role": apidoc.Enum("owner", "installer", "operator", "connectedServiceProvider"),
			"name": apidoc.Str(), "email": apidoc.Str(), "phone": apidoc.Str()}, "role", "name"))}, "stakeholders"),
		"PlantLogs":  logs(false),
		"DeviceLogs": logs(true),
		"Communication": plantHead(apidoc.Obj{"devices": apidoc.Arr(apidoc.Object(apidoc.Obj{"deviceId": apidoc.Str(),
			"status":         apidoc.Enum("Ok", "Partial", "TimedOut", "Unreachable"),
			"lastContactUtc": apidoc.UTCTime(), "lastError": apidoc.Str(), "successRate": apidoc.Obj{"type": "number", "minimum": 0, "maximum": 1}},
			"deviceId", "status", "successRate"))}, "devices"),
		"SetList": plantHead(apidoc.Obj{"device": apidoc.Ref("DeviceRef"), "sets": apidoc.Arr(apidoc.Enum("EnergyAndPowerPv", "EnergyAndPowerInOut",
			"EnergyAndPowerConsumption", "EnergyAndPowerBattery", "PowerAc", "PowerDc", "EnergyDc", "EnergyMix", "Sensor"))}, "device", "sets"),
		"SetRow": setRow,
		"MeasurementSet": plantHead(apidoc.Obj{"device": apidoc.Ref("DeviceRef"), "setType": apidoc.Str(),
			"resolution": apidoc.Enum("OneMinute", "FiveMinutes", "FifteenMinutes", "OneHour", "OneDay", "OneMonth", "OneYear"),
			"set":        apidoc.Arr(apidoc.Ref("SetRow")), "total": apidoc.Ref("SetRow")}, "setType", "resolution", "set"),
		"DataError":         dataError,
		"LiveEnergyBalance": liveEnv(apidoc.Object(balanceFields, "time"), false),
		"LiveEnergyMix":     liveEnv(apidoc.Object(mixFields, "time"), true),
		"LiveDevicesV1":     liveDevices([]string{"Active", "Inactive"}),
		"LiveDevicesV2":     liveDevices([]string{"Ok", "Warning", "Error", "Off", "NotAvailable"}),
		"LiveDevice":        liveDeviceSchema(),
	}
	maps.Copy(s, gridControlSchemas())
	maps.Copy(s, statusSchemas())
	maps.Copy(s, consumerSchemas())
	return s
}

// statusSchemas are the schemas of /readyz and /healthz.
func statusSchemas() apidoc.Obj {
	return apidoc.Obj{
		"Ready": apidoc.Object(apidoc.Obj{"ready": apidoc.Bool(), "reason": apidoc.Str()}, "ready"),
		"Health": apidoc.Object(apidoc.Obj{"status": apidoc.Describe(apidoc.Enum("Ok", "Degraded", "Error"), "Degraded (still 200): some active devices are unreachable"),
			"storage": apidoc.Object(apidoc.Obj{"status": apidoc.Str(), "error": apidoc.Str(),
				"bytesWritten":  apidoc.Describe(apidoc.Obj{"type": "integer"}, "bytes the plantd process sent to the block layer since it started (the storage's wear; absent where the kernel does not count it)"),
				"databaseBytes": apidoc.Describe(apidoc.Obj{"type": "integer"}, "size of the database file plus its WAL")}, "status"),
			"devices": apidoc.Object(apidoc.Obj{"total": apidoc.Obj{"type": "integer"}, "ok": apidoc.Obj{"type": "integer"}, "unreachable": apidoc.Obj{"type": "integer"}}),
			"mqtt": apidoc.Object(apidoc.Obj{"status": apidoc.Str(), "since": apidoc.UTCTime(), "lastError": apidoc.Str(),
				"broker": apidoc.Describe(apidoc.Str(), "the broker URL in use, or last tried (one of mqtt.brokers)"),
				"streams": apidoc.Arr(apidoc.Object(apidoc.Obj{"stream": apidoc.Str(), "depth": apidoc.Obj{"type": "integer"}, "oldestUnsentAgeSeconds": apidoc.Num(),
					"dropped": apidoc.Obj{"type": "integer"}}, "stream", "depth"))}, "status")}, "status", "storage", "devices", "mqtt"),
	}
}

// plantHead is an answer object headed by its plant.
func plantHead(extra apidoc.Obj, req ...string) apidoc.Obj {
	extra["plant"] = apidoc.Ref("Plant")
	return apidoc.Object(extra, append([]string{"plant"}, req...)...)
}

// gridControlSchemas are the schemas of /gridcontrol/v1.
func gridControlSchemas() apidoc.Obj {
	return apidoc.Obj{
		"Schedules":       plantHead(apidoc.Obj{"schedules": apidoc.Arr(apidoc.Ref("Schedule"))}, "schedules"),
		"ScheduleCreated": plantHead(apidoc.Obj{"schedule": apidoc.Ref("Schedule")}, "schedule"),
		"Schedule": apidoc.Describe(apidoc.Object(apidoc.Obj{"scheduleId": apidoc.Str(), "plantId": apidoc.Str(), "createdAt": apidoc.Obj{"type": "string", "format": "date-time"},
			"createdBy": apidoc.Describe(apidoc.Str(), "the credential that sent it and its role"),
			"role":      apidoc.Describe(apidoc.Enum("installer", "gridoperator"), "the role of that credential: windows of one command from different roles never overwrite each other"),
			"commands": apidoc.Arr(apidoc.Describe(apidoc.Object(apidoc.Obj{"command": apidoc.Ref("Command"), "start": apidoc.Obj{"type": "string", "format": "date-time"},
				"end": apidoc.Obj{"type": "string", "format": "date-time"}, "value": apidoc.Num(), "unit": apidoc.Enum("%", "W", "V", "cos"), "curve": apidoc.Ref("Curve"),
				"status":       apidoc.Describe(apidoc.Enum("pending", "active", "done", "superseded", "overridden", "failed"), "superseded: newer windows of the same role cover it; overridden: open, but another role's window of the command governs now (the grid operator's, or a more restrictive limit)"),
				"overriddenBy": apidoc.Describe(apidoc.Str(), "the scheduleId whose window governs instead (status overridden)"),
				"reason":       apidoc.Describe(apidoc.Str(), "why the command failed or was applied late"),
				"appliedAt":    apidoc.Obj{"type": "string", "format": "date-time"}, "late": apidoc.Bool(),
				"partial":   apidoc.Describe(apidoc.Bool(), "some of the plant's active inverters do not act on the command (plantd's); status keeps its meaning"),
				"coverage":  apidoc.Describe(apidoc.Num(), "share 0..1 of the active inverters' rated power that acts on the command (only on partial windows)"),
				"inverters": apidoc.Describe(apidoc.Arr(apidoc.Ref("InverterCoverage")), "each active inverter: whether it acts and why not (only on partial windows)"),
				"repeat":    apidoc.Describe(apidoc.Str(), "a recurring command's cron spec (plantd's): start and end are then its current window (open now, or the next one)"),
				"duration":  apidoc.Describe(apidoc.Str(), "the length of each window of a recurring command, a Go duration (plantd's)"),
				"until":     apidoc.Describe(apidoc.UTCTime(), "no window of the recurring command starts at or after it (plantd's)"),
				"next":      apidoc.Describe(apidoc.Arr(apidoc.Ref("Occurrence")), "the next windows of a recurring command after the current one, at most three (plantd's)"),
				"finished":  apidoc.Describe(apidoc.Arr(apidoc.Ref("Occurrence")), "the ended windows of a recurring command, oldest first, within the time finished schedules are kept (plantd's; include=finished only)"),
				"writes":    apidoc.Describe(apidoc.Arr(apidoc.Ref("AuditWrite")), "the audit of the window: the writes that set or changed the control on each device, read back (plantd's; include=finished only)"),
				"cancelled": apidoc.Describe(apidoc.Bool(), "the schedule was cancelled (DELETE) before the window ended: end is the time of cancellation, or the start of a window that never started (plantd's)")},
				"command", "start", "end", "status"), "one window of a command and its status"))},
			"scheduleId", "plantId", "createdAt", "commands"), "a stored schedule (plantd's shape, DESIGN §6)"),
		"Occurrence": apidoc.Describe(apidoc.Object(apidoc.Obj{"start": apidoc.UTCTime(), "end": apidoc.UTCTime(),
			"status": apidoc.Describe(apidoc.Enum("pending", "active", "done", "superseded", "overridden", "failed"), "next: absent; finished: done, superseded or failed"),
			"reason": apidoc.Str(), "appliedAt": apidoc.UTCTime(), "late": apidoc.Bool(),
			"writes": apidoc.Arr(apidoc.Ref("AuditWrite"))}, "start", "end"), "one window of a recurring command (plantd's)"),
		"AuditWrite": apidoc.Describe(apidoc.Object(apidoc.Obj{"deviceId": apidoc.Str(), "model": apidoc.Describe(apidoc.Obj{"type": "integer"}, "the SunSpec model written"),
			"what":       apidoc.Describe(apidoc.Str(), "the write as the plant log names it (model 704 WMaxLimPct 40 %)"),
			"readBackAt": apidoc.Describe(apidoc.UTCTime(), "when the device's answer to the read-back came"),
			"points": apidoc.Arr(apidoc.Object(apidoc.Obj{"point": apidoc.Describe(apidoc.Str(), "the SunSpec point (top level of the model)"), "value": apidoc.Describe(apidoc.Num(), "the value written"),
				"readBack": apidoc.Describe(apidoc.Num(), "the value read back right after the write (equal, or the write would have failed; a trigger such as AdptCrvReq may differ)")}, "point", "value"))},
			"deviceId", "model", "what", "readBackAt"), "one write of a window to a device with its read-back (plantd's)"),
		"ScheduleRequest": apidoc.Obj{"type": "object", "additionalProperties": false, "required": []string{"commands"},
			"description": "POST creates the schedule; for each command, in every slice of time the newest schedule of a role wins and the older one is reported superseded; " +
				"across roles the most restrictive limit (opModMaxLimW, FeedInLimit) of the grid operator's and the installer's applies and, for the other commands, the grid operator's window; the losing window is reported overridden. " +
				"Windows of one command must not overlap; times RFC 3339 with offset, 2000..2099, or relative to the gateway's clock when the request arrives " +
				"(\"+\" and a duration: +10s, +2m, +1h30m; under plantd demo the simulated clock), stored as the times they name; a window must end in the future. " +
				"FeedInLimit and opModMaxLimW: value in % of rated power (unit %, default) or W; opModFixedPF*: a displacement power factor 0 < PF <= 1 " +
				"(no unit, or cos; a power factor is not a %); OpModDisconnect: no value; curve commands: curve.points, x and y in the units of the SunSpec models " +
				"(a voltage in % of the device's reference voltage: 12x/13x % VRef, 7xx % VNom), with these ranges: opModVoltVar x voltage 50..150 %, y var -100..100 %; " +
				"opModVoltWatt x voltage 50..150 %, y W -100..100 %; opModFreqWatt x 40..70 Hz, y W -100..100 %; opModLvrtMustTrip x trip time 0..3600 s, y voltage 0..100 %; " +
				"opModHvrtMustTrip x 0..3600 s, y voltage 100..200 %; opModLfrtMustTrip and opModHfrtMustTrip x 0..3600 s, y 40..70 Hz; " +
				"a curve with a voltage axis may send it in volts with unit V: plantd converts it per device with that device's reference voltage (121 VRef, 702 VNom; 422 when a point then falls outside the range); " +
				"or curve.params (127, 711: writable point names). A point out of range is a 400 naming commands[i].curve.points[j]. " +
				"A recurring command (plantd's) carries repeat, a cron spec of five fields (minute hour day-of-month month day-of-week; UTC, or CRON_TZ=<zone> first), " +
				"and duration, a Go duration (4h, 30m): a window of that length starts at each time the spec names, for as long as the schedule stands, none at or after until (optional); " +
				"start (optional) is the earliest start, end is refused; without start the window open now counts. duration must be at least 1s and at most the spec's period " +
				"(windows of one command do not overlap); a recurring command is the only window of its command in its schedule. 400 names commands[i].repeat, .duration, .until or .end.",
			"properties": apidoc.Obj{"commands": apidoc.Obj{"type": "array", "minItems": 1, "maxItems": 1500, "items": apidoc.Object(apidoc.Obj{"command": apidoc.Ref("Command"),
				"start": apidoc.WindowTime(), "end": apidoc.WindowTime(),
				"value": apidoc.Num(), "unit": apidoc.Enum("%", "W", "V", "cos"), "curve": apidoc.Ref("Curve"),
				"repeat":   apidoc.Describe(apidoc.Str(), "cron spec of five fields, optionally after CRON_TZ=<zone> (plantd's): a recurring command, with duration instead of end"),
				"duration": apidoc.Describe(apidoc.Str(), "Go duration of each window of a recurring command (plantd's)"),
				"until":    apidoc.Describe(apidoc.WindowTime(), "no window of a recurring command starts at or after it (plantd's)")}, "command")}},
			"examples": []any{
				apidoc.Obj{"commands": []any{apidoc.Obj{"command": "opModMaxLimW", "repeat": "CRON_TZ=Europe/Berlin 0 11 * * *", "duration": "4h", "value": 60, "unit": "%"}}},
				apidoc.Obj{"commands": []any{
					apidoc.Obj{"command": "opModMaxLimW", "start": "2026-11-24T10:00:00+01:00", "end": "2026-11-24T12:00:00+01:00", "value": 60, "unit": "%"},
					apidoc.Obj{"command": "opModMaxLimW", "start": "2026-11-24T12:00:00+01:00", "end": "2026-11-24T14:00:00+01:00", "value": 40, "unit": "%"}}},
				apidoc.Obj{"commands": []any{apidoc.Obj{"command": "opModVoltVar", "start": "2026-11-24T10:00:00+01:00", "end": "2026-11-24T18:00:00+01:00",
					"curve": apidoc.Obj{"points": []any{apidoc.Obj{"x": 90, "y": 44}, apidoc.Obj{"x": 96, "y": 0}, apidoc.Obj{"x": 104, "y": 0}, apidoc.Obj{"x": 110, "y": -44}}}}}},
				apidoc.Obj{"commands": []any{apidoc.Obj{"command": "opModVoltVar", "start": "2026-11-24T10:00:00+01:00", "end": "2026-11-24T18:00:00+01:00", "unit": "V",
					"curve": apidoc.Obj{"points": []any{apidoc.Obj{"x": 207, "y": 44}, apidoc.Obj{"x": 220, "y": 0}, apidoc.Obj{"x": 240, "y": 0}, apidoc.Obj{"x": 253, "y": -44}}}}}},
			}},
		"Curve": apidoc.Object(apidoc.Obj{"points": apidoc.Arr(apidoc.Object(apidoc.Obj{"x": apidoc.Num(), "y": apidoc.Num()}, "x", "y")),
			"params": apidoc.Obj{"type": "object", "additionalProperties": apidoc.Num()}}),
		"Command": apidoc.Enum(commandNames()...),
		"EligibilityRequest": apidoc.Object(apidoc.Obj{"plantId": apidoc.Str(), "deviceId": apidoc.Str(), "meterId": apidoc.Str(), "serialNumber": apidoc.Str(),
			"commands": apidoc.Arr(apidoc.Ref("Command"))}, "commands"),
		"EligibleCommandsRequest": apidoc.Object(apidoc.Obj{"plantId": apidoc.Str(), "deviceId": apidoc.Str(), "meterId": apidoc.Str(), "serialNumber": apidoc.Str()}),
		"EligibilityResult": plantHead(apidoc.Obj{"checkedAt": apidoc.UTCTime(), "results": apidoc.Arr(apidoc.Object(apidoc.Obj{"command": apidoc.Ref("Command"),
			"devices":  apidoc.Describe(apidoc.Arr(apidoc.Str()), "ids of the inverters that carry the command now"),
			"eligible": apidoc.Bool(), "reasons": apidoc.Arr(apidoc.Ref("Reason")),
			"partial":   apidoc.Describe(apidoc.Bool(), "eligible, but some active inverters do not act on the command (plantd's)"),
			"coverage":  apidoc.Describe(apidoc.Num(), "share 0..1 of the active inverters' rated power that acts on the command (plantd's)"),
			"inverters": apidoc.Describe(apidoc.Arr(apidoc.Ref("InverterCoverage")), "every active inverter: whether it acts on the command and why not (plantd's)")},
			"command", "eligible"))},
			"checkedAt", "results"),
		"Reason": apidoc.Object(apidoc.Obj{"code": apidoc.Str(), "message": apidoc.Str()}, "code", "message"),
		"InverterCoverage": apidoc.Describe(apidoc.Object(apidoc.Obj{"deviceId": apidoc.Str(), "acts": apidoc.Bool(), "reason": apidoc.Ref("Reason"), "ratedPowerW": apidoc.Num(), "note": apidoc.Ref("Reason")}, "deviceId", "acts"),
			"acts: the inverter carries the command (an offline one once it is back: reason DevicesOffline); otherwise reason says why not "+
				"(NotOfferedOnNewerPlatform, NotOfferedOnClassicPlatform, NotSupportedByDevices, DevicesNotDiscovered, NoGridMeter). "+
				"note: what an acting inverter cannot do for the command (NoReversionToDefault: a limit on a classic model 123 reverts to no limit, "+
				"so where the inverter's default is a limit plantd writes windows without a reversion time and the window's limit stays if plantd stops)"),
		"EligibleCommands": plantHead(apidoc.Obj{"eligibleCommands": apidoc.Arr(apidoc.Ref("Command"))}, "eligibleCommands"),
		"Settings": plantHead(apidoc.Obj{"settingsType": apidoc.Enum(gridcontrol.SettingsTypes...), "configurations": apidoc.Arr(apidoc.Object(apidoc.Obj{
			"type": apidoc.Describe(apidoc.Str(), "the configuration's active name when an inverter has it enabled, its Deactivated form otherwise"),
			"function": apidoc.Describe(apidoc.Str(), "plantd's: which function the configuration is, its active name whether on or off "+
				"(two configurations share the Deactivated form ReactivePowerGridDeactivatedSetting: function FixedPowerFactorSetting or VoltVarCurveSetting)"),
			"supported": apidoc.Bool(), "devices": apidoc.Arr(apidoc.Str()), "active": apidoc.Bool(),
			"values": apidoc.Arr(apidoc.Object(apidoc.Obj{"device": apidoc.Str(), "model": apidoc.Obj{"type": "integer"}, "enabled": apidoc.Bool(),
				"limitPct": apidoc.Num(), "powerFactor": apidoc.Num(), "curve": apidoc.Ref("Curve"), "controlledByPlantd": apidoc.Bool()},
				"device", "model", "enabled", "controlledByPlantd"))},
			"type", "function", "supported", "devices", "active", "values"))}, "settingsType", "configurations"),
	}
}

func commandNames() []string {
	out := make([]string, 0, len(gridcontrol.Commands))
	for _, c := range gridcontrol.Commands {
		out = append(out, c.Name)
	}
	return out
}

func setParams(period bool) []apidoc.Obj {
	ps := []apidoc.Obj{
		apidoc.Param("Date", "query", "YYYY-MM-DD for Day and Week, YYYY-MM for Month, YYYY for Year, none for Recent and Total (also accepted as date); default: the current period", apidoc.Str(), false),
		apidoc.Param("WithTotal", "query", "adds total", apidoc.Enum("true", "false", "True", "False", "TRUE", "FALSE"), false),
		apidoc.Param("ReturnEnergyValues", "query", "Wh per interval instead of W for EnergyAndPower* sets", apidoc.Enum("true", "false", "True", "False", "TRUE", "FALSE"), false),
	}
	if period {
		ps = append(ps, apidoc.Param("period", "path", "Recent | Day | Week | Month | Year | Total, any letter case", apidoc.Str(), true))
	}
	return ps
}

func logParams() []apidoc.Obj {
	return []apidoc.Obj{
		apidoc.Param("From", "query", "RFC 3339 start (inclusive)", apidoc.Obj{"type": "string", "format": "date-time"}, false),
		apidoc.Param("To", "query", "RFC 3339 end", apidoc.Obj{"type": "string", "format": "date-time"}, false),
		apidoc.Param("cursor", "query", "the next of the previous page", apidoc.Str(), false),
		apidoc.Param("limit", "query", "1..1000, default 100", apidoc.Obj{"type": "integer", "minimum": 1, "maximum": 1000}, false),
	}
}

var (
	plantIDParam  = apidoc.Param("plantId", "path", "plant id", apidoc.Str(), true)
	deviceIDParam = apidoc.Param("deviceId", "path", "device id", apidoc.Str(), true)
)

// interfaces are the spec's three interfaces with their description
// versions (spec §9): each is a tag of the document, its operations
// tagged with it, the version in the tag and in info.version.
var interfaces = []struct{ name, prefix, version, date string }{
	{"Monitoring", "/monitoring/", "1.16.0", "2023-05-23"},
	{"Grid control", "/gridcontrol/", "1.9.0", "2023-03-29"},
	{"Live", "/live/", "1.14.0", "2023-05-23"},
}

// gatewayTag tags the operations outside the three interfaces: the
// authorization server, the owner's consents, health, metrics, this
// document and the page.
const gatewayTag = "Gateway"

// The routes the spec calls obsolete (§4.2, §4.3), since the day of the
// interface version that made them so (§9): eligibleCommands with Grid
// control 1.8.0, the live device list v1 with Live 1.10.0.
var (
	obsoleteEligibleCommands = apidoc.Deprecation{Since: time.Date(2023, 3, 7, 0, 0, 0, 0, time.UTC),
		Successor: "/gridcontrol/v1/plants/eligibilityCheck"}
	obsoleteLiveDevicesV1 = apidoc.Deprecation{Since: time.Date(2022, 6, 28, 0, 0, 0, 0, time.UTC),
		Successor: "/live/v2/plants/{plantId}/devices"}
)

// tagOf is the tag of the operation at path.
func tagOf(path string) string {
	for _, in := range interfaces {
		if strings.HasPrefix(path, in.prefix) {
			return in.name
		}
	}
	return gatewayTag
}

// apiRoutes lists every operation; routes() registers the same set.
func apiRoutes() []apidoc.Route {
	var rs []apidoc.Route
	add := func(r apidoc.Route) { rs = append(rs, r) }
	add(apidoc.Route{Method: "get", Path: "/monitoring/v1/plants", Summary: "Plant list", Response: "PlantList"})
	add(apidoc.Route{Method: "get", Path: "/monitoring/v1/plants/{plantId}", Summary: "The bare plant object (plantId, name, description, timezone)",
		Response: "Plant", Params: []apidoc.Obj{plantIDParam}, IDs: true})
	add(apidoc.Route{Method: "get", Path: "/monitoring/v1/plants/{plantId}/devices/lean", Summary: "Devices without the plant wrapper; deactivated ones only with WithDeactivatedDevices=true",
		Response: "DevicesLean", Params: []apidoc.Obj{plantIDParam, apidoc.Param("WithDeactivatedDevices", "query", "also list deactivated devices",
			apidoc.Enum("true", "false", "True", "False", "TRUE", "FALSE"), false)}, IDs: true, Errs: []string{"400"}})
	add(apidoc.Route{Method: "get", Path: "/monitoring/v1/devices/{deviceId}", Summary: "A device: its plant and its device object (modelled)",
		Response: "DeviceDetails", Params: []apidoc.Obj{deviceIDParam}, IDs: true})
	for _, r := range []struct{ seg, summary, resp string }{
		{"installation", "Installation data", "PlantInstallation"},
		{"configuration", "Configuration", "Configuration"},
		{"devices", "Devices", "Devices"},
		{"stakeholders", "Stakeholders", "Stakeholders"},
		{"communication", "Communication status", "Communication"},
	} {
		add(apidoc.Route{Method: "get", Path: "/monitoring/v1/plants/{plantId}/" + r.seg, Summary: r.summary, Response: r.resp, Params: []apidoc.Obj{plantIDParam}, IDs: true})
	}
	add(apidoc.Route{Method: "get", Path: "/monitoring/v1/plants/{plantId}/logs", Summary: "Plant log messages (installer)", Response: "PlantLogs",
		Params: append([]apidoc.Obj{plantIDParam}, logParams()...), IDs: true, Errs: []string{"400", "403"}})
	add(apidoc.Route{Method: "get", Path: "/monitoring/v1/plants/{plantId}/measurements/sets/EnergyBalance", Summary: "Energy balance (Recent)",
		Response: "MeasurementSet", Params: append([]apidoc.Obj{plantIDParam}, setParams(false)...), IDs: true, Errs: []string{"400"}})
	add(apidoc.Route{Method: "get", Path: "/monitoring/v1/plants/{plantId}/measurements/sets/EnergyBalance/{period}", Summary: "Energy balance of a period",
		Response: "MeasurementSet", Params: append([]apidoc.Obj{plantIDParam}, setParams(true)...), IDs: true, Errs: []string{"400"}})
	setTypeParam := apidoc.Param("setType", "path", "the set type in any letter case (energybalance, POWERAC, ...)", apidoc.Str(), true)
	add(apidoc.Route{Method: "get", Path: "/monitoring/v1/plants/{plantId}/measurements/sets/{setType}", Summary: "Energy balance (Recent), set type in any letter case",
		Response: "MeasurementSet", Params: append([]apidoc.Obj{plantIDParam, setTypeParam}, setParams(false)...), IDs: true, Errs: []string{"400"}})
	add(apidoc.Route{Method: "get", Path: "/monitoring/v1/plants/{plantId}/measurements/sets/{setType}/{period}", Summary: "Energy balance of a period, set type in any letter case",
		Response: "MeasurementSet", Params: append([]apidoc.Obj{plantIDParam, setTypeParam}, setParams(true)...), IDs: true, Errs: []string{"400"}})
	add(apidoc.Route{Method: "get", Path: "/monitoring/v2/plants/{plantId}/measurements/sets/EnergyBalance/{period}", Summary: "Energy balance of a period (v2, the same as v1)",
		Response: "MeasurementSet", Params: append([]apidoc.Obj{plantIDParam}, setParams(true)...), IDs: true, Errs: []string{"400"}})
	add(apidoc.Route{Method: "get", Path: "/monitoring/v2/plants/{plantId}/measurements/sets/{setType}/{period}", Summary: "Energy balance of a period (v2), set type in any letter case",
		Response: "MeasurementSet", Params: append([]apidoc.Obj{plantIDParam, setTypeParam}, setParams(true)...), IDs: true, Errs: []string{"400"}})
	add(apidoc.Route{Method: "get", Path: "/monitoring/v1/devices/{deviceId}/logs", Summary: "Device log messages (installer)", Response: "DeviceLogs",
		Params: append([]apidoc.Obj{deviceIDParam}, logParams()...), IDs: true, Errs: []string{"400", "403"}})
	add(apidoc.Route{Method: "get", Path: "/monitoring/v1/devices/{deviceId}/measurements/sets", Summary: "Measurement sets of a device", Response: "SetList",
		Params: []apidoc.Obj{deviceIDParam}, IDs: true})
	for _, st := range deviceSetTypes {
		p := "/monitoring/v1/devices/{deviceId}/measurements/sets/" + string(st)
		add(apidoc.Route{Method: "get", Path: p, Summary: string(st) + " (Recent)", Response: "MeasurementSet", Params: append([]apidoc.Obj{deviceIDParam}, setParams(false)...), IDs: true, Errs: []string{"400"}})
		add(apidoc.Route{Method: "get", Path: p + "/{period}", Summary: string(st) + " of a period", Response: "MeasurementSet", Params: append([]apidoc.Obj{deviceIDParam}, setParams(true)...), IDs: true, Errs: []string{"400"}})
	}
	add(apidoc.Route{Method: "get", Path: "/monitoring/v1/devices/{deviceId}/measurements/sets/{setType}", Summary: "A device set (Recent), set type in any letter case",
		Response: "MeasurementSet", Params: append([]apidoc.Obj{deviceIDParam, setTypeParam}, setParams(false)...), IDs: true, Errs: []string{"400"}})
	add(apidoc.Route{Method: "get", Path: "/monitoring/v1/devices/{deviceId}/measurements/sets/{setType}/{period}", Summary: "A device set of a period, set type in any letter case",
		Response: "MeasurementSet", Params: append([]apidoc.Obj{deviceIDParam, setTypeParam}, setParams(true)...), IDs: true, Errs: []string{"400"}})
	add(apidoc.Route{Method: "get", Path: "/monitoring/v1/devices/{deviceId}/measurement/sets/EnergyMix/{period}", Summary: "Energy mix of a period (spec's singular path)",
		Response: "MeasurementSet", Params: append([]apidoc.Obj{deviceIDParam}, setParams(true)...), IDs: true, Errs: []string{"400"}})

	add(apidoc.Route{Method: "get", Path: "/gridcontrol/v1/plants/{plantId}/schedules", Summary: "Schedules (fallbacks hidden)", Response: "Schedules",
		Params: []apidoc.Obj{plantIDParam, apidoc.Param("include", "query", "finished: also the audit, each window's writes with their read-back and a recurring command's finished windows (plantd's)", apidoc.Enum("finished"), false)},
		IDs:    true, Errs: []string{"400"}})
	add(apidoc.Route{Method: "delete", Path: "/gridcontrol/v1/plants/{plantId}/schedules/{scheduleId}", Summary: "Cancel a schedule (installer, gridoperator; plantd's): open windows end now, pending ones and later occurrences never start; it stays listed",
		Params: []apidoc.Obj{plantIDParam, apidoc.Param("scheduleId", "path", "schedule id", apidoc.Str(), true)}, IDs: true, Errs: []string{"403", "501"},
		Extra: apidoc.Obj{"204": apidoc.Obj{"description": "cancelled"}}})
	add(apidoc.Route{Method: "post", Path: "/gridcontrol/v1/plants/{plantId}/schedules", Summary: "Create or overwrite schedules (installer, gridoperator): 201 with the stored schedule",
		Params: []apidoc.Obj{plantIDParam, apidoc.Param("skipEligibilityCheck", "query", "skip the eligibility check", apidoc.Enum("true", "false"), false),
			apidoc.Param("requireAll", "query", "all or nothing: 422 for a command that not every active inverter acts on (also with skipEligibilityCheck); without it such a command is stored with its windows marked partial (plantd's)", apidoc.Enum("true", "false"), false)},
		Body: "ScheduleRequest", BodyType: "application/json", IDs: true, Errs: []string{"400", "403", "413", "415", "422", "501"},
		Extra: apidoc.Obj{"201": apidoc.Obj{"description": "stored and armed", "content": apidoc.Obj{"application/json": apidoc.Obj{"schema": apidoc.Ref("ScheduleCreated")}}}}})
	add(apidoc.Route{Method: "post", Path: "/gridcontrol/v1/plants/eligibilityCheck", Summary: "Eligibility check; a migrated plantId in the body is corrected internally",
		Params:   []apidoc.Obj{apidoc.Param("requireAll", "query", "judge as POST schedules with requireAll=true: a partial command is not eligible (reason NotEveryInverter) (plantd's)", apidoc.Enum("true", "false"), false)},
		Response: "EligibilityResult", Body: "EligibilityRequest", BodyType: "application/json", Errs: []string{"400", "413", "415"}})
	add(apidoc.Route{Method: "post", Path: "/gridcontrol/v1/plants/eligibleCommands", Summary: "Eligible commands (obsolete since Grid control 1.8.0: eligibilityCheck)",
		Response: "EligibleCommands", Body: "EligibleCommandsRequest", BodyType: "application/json", Errs: []string{"400", "413", "415"},
		Deprecated: &obsoleteEligibleCommands})
	add(apidoc.Route{Method: "get", Path: "/gridcontrol/v1/plants/{id}/settings/{settingsType}", Summary: "Current grid settings of one type",
		Response: "Settings", Params: []apidoc.Obj{apidoc.Param("id", "path", "plant id", apidoc.Str(), true), apidoc.Param("settingsType", "path", "settings type", apidoc.Enum(gridcontrol.SettingsTypes...), true)},
		IDs: true, Errs: []string{"400"}})

	add(apidoc.Route{Method: "get", Path: "/live/v1/plants/{plantId}/measurements/sets/EnergyBalance", Summary: "Live energy balance", Response: "LiveEnergyBalance", Params: []apidoc.Obj{plantIDParam}, IDs: true})
	add(apidoc.Route{Method: "get", Path: "/live/v1/devices/{deviceId}/measurement/sets/EnergyMix", Summary: "Live energy mix (of the device's plant)", Response: "LiveEnergyMix", Params: []apidoc.Obj{deviceIDParam}, IDs: true})
	add(apidoc.Route{Method: "get", Path: "/live/v1/plants/{plantId}/devices", Summary: "Live device list v1 (obsolete since Live 1.10.0: v2)", Response: "LiveDevicesV1", Params: []apidoc.Obj{plantIDParam}, IDs: true,
		Deprecated: &obsoleteLiveDevicesV1})
	add(apidoc.Route{Method: "get", Path: "/live/v2/plants/{plantId}/devices", Summary: "Live device list v2", Response: "LiveDevicesV2", Params: []apidoc.Obj{plantIDParam}, IDs: true})
	add(apidoc.Route{Method: "get", Path: "/live/v1/devices/{deviceId}", Summary: "Live values of one device with units, health, communication and SunSpec models (plantd's)", Response: "LiveDevice", Params: []apidoc.Obj{deviceIDParam}, IDs: true})

	consumerID := apidoc.Param("deviceId", "path", "the consumer's device id", apidoc.Str(), true)
	add(apidoc.Route{Method: "get", Path: "/gateway/v1/consumers", Summary: "The home energy manager's consumers: settings, output, consumption and why (plantd's); empty when the gateway has none",
		Response: "Consumers", Params: []apidoc.Obj{apidoc.Param("plantId", "query", "only the consumers of this plant (404 when unknown; a migrated id answers for the new one; empty: all)", apidoc.Str(), false)}})
	add(apidoc.Route{Method: "get", Path: "/gateway/v1/consumers/{deviceId}", Summary: "One consumer, as in the list (plantd's)",
		Response: "Consumer", Params: []apidoc.Obj{consumerID}, IDs: true})
	add(apidoc.Route{Method: "put", Path: "/gateway/v1/consumers/{deviceId}/mode", Summary: "Set a consumer's mode (installer, gridoperator): Auto, On or Off; 200 with the consumer after the change (plantd's)",
		Response: "Consumer", Params: []apidoc.Obj{consumerID}, Body: "ConsumerModeRequest", BodyType: "application/json", IDs: true,
		Errs: []string{"400", "403", "413", "415", "503"}})
	add(apidoc.Route{Method: "put", Path: "/gateway/v1/consumers/{deviceId}/plan", Summary: "Put a charger in mode Plan (installer, gridoperator): charge energy (Wh) or a SoC (%) by a deadline in the day-ahead plan's cheapest slots, as evcc's plans; 200 with the consumer after the change (plantd's)",
		Response: "Consumer", Params: []apidoc.Obj{consumerID}, Body: "ConsumerPlanRequest", BodyType: "application/json", IDs: true,
		Errs: []string{"400", "403", "413", "415", "422", "503"}})
	add(apidoc.Route{Method: "get", Path: "/gateway/v1/inputs", Summary: "The grid operator's inputs (ripple-control receiver, control box): contacts as last read, what they map to, their window in grid control, and the §14a dimming state (plantd's); empty without inputs",
		Params: []apidoc.Obj{apidoc.Param("plantId", "query", "only this plant's inputs (404 when unknown; a migrated id answers for the new one; empty: all)", apidoc.Str(), false)},
		Errs:   []string{"400"}, Extra: apidoc.Obj{"200": inputsResponse()}})
	add(apidoc.Route{Method: "get", Path: "/gateway/v1/tariffs", Summary: "The grid and feed-in tariffs and their prices from now to the end of tomorrow (plantd's); configured false without a tariffs: section",
		Params: []apidoc.Obj{apidoc.Param("hours", "query", "the next N hours instead (1..48)", apidoc.Obj{"type": "integer", "minimum": 1, "maximum": maxTariffHours}, false)},
		Errs:   []string{"400"}, Extra: apidoc.Obj{"200": tariffsResponse()}})
	add(apidoc.Route{Method: "get", Path: "/gateway/v1/plan", Summary: "The day-ahead plan (battery, SG-Ready heat pump, a car in Plan mode, negative-price export hold) from the tariffs, the PV forecast and the live plant, slot by slot, with its cost against no plan (plantd's); configured false without a tariffs: section",
		Errs: []string{"400"}, Extra: apidoc.Obj{"200": planResponse()}})
	add(apidoc.Route{Method: "get", Path: "/gateway/v1/forecast", Summary: "The PV and base-load forecasts: each plant's mean PV power per 15-minute slot for the next 36 h (from its history, its weather sensor and an optional forecast service) and the house's base load per slot (from its last 14 days), and the last days' accuracy against the measured PV and base load (plantd's); empty when it runs for no plant",
		Params: []apidoc.Obj{apidoc.Param("plantId", "query", "only this plant's forecast (404 when unknown; a migrated id answers for the new one; empty: all)", apidoc.Str(), false)},
		Errs:   []string{"400"}, Extra: apidoc.Obj{"200": forecastResponse()}})

	for _, o := range oauth2.Routes() { // the authorization server's
		rs = append(rs, apidoc.Route{Method: o.Method, Path: o.Path, Summary: o.Summary, Response: o.Response, Params: o.Params,
			Errs: o.Errs, Body: o.Body, BodyType: o.BodyType, Form: o.Form, Open: o.Open, Extra: o.Extra,
			OAuthErrors: o.OAuthErrors, ClientAuth: o.ClientAuth})
	}
	add(apidoc.Route{Method: "get", Path: "/healthz", Summary: "Health of storage, devices and MQTT (loopback only)", Response: "Health", Open: true,
		Errs: []string{"403"}, Extra: apidoc.Obj{"503": apidoc.Obj{"description": "unhealthy", "content": apidoc.Obj{"application/json": apidoc.Obj{"schema": apidoc.Ref("Health")}}}}})
	add(apidoc.Route{Method: "get", Path: "/readyz", Summary: "Readiness: storage works and every active device answered once or was given up on as offline (loopback only)", Response: "Ready", Open: true,
		Errs: []string{"403"}, Extra: apidoc.Obj{"503": apidoc.Obj{"description": "not ready, with the reason", "content": apidoc.Obj{"application/json": apidoc.Obj{"schema": apidoc.Ref("Ready")}}}}})
	add(apidoc.Route{Method: "get", Path: "/metrics", Summary: "Prometheus metrics (loopback only)", Open: true, Errs: []string{"403"},
		Extra: apidoc.Obj{"200": apidoc.Obj{"description": "Prometheus text format", "content": apidoc.Obj{"text/plain": apidoc.Obj{"schema": apidoc.Str()}}}}})
	add(apidoc.Route{Method: "get", Path: "/openapi.json", Summary: "This document", Open: true,
		Extra: apidoc.Obj{"200": apidoc.Obj{"description": "OpenAPI 3.1", "content": apidoc.Obj{"application/json": apidoc.Obj{"schema": apidoc.Obj{"type": "object"}}}}}})
	rs = append(rs, pageRoutes()...)
	return rs
}

var statusText = map[string]string{
	"400": "bad parameter or body (names the parameter)", "401": "missing or invalid token (WWW-Authenticate)",
	"403": "role too low or not loopback", "404": "unknown route, plant or device", "405": "method not allowed (Allow)",
	"413": "body over 1 MiB", "415": "wrong content type", "422": "command not eligible", "429": "rate limited (Retry-After)",
	"409": "the consent request is decided already", "500": "internal error (with request id)", "501": "not implemented yet",
	"503": "the request was cancelled before it was done",
}

// renderOpenAPI renders the document from the route table and the
// schemas; openapi.json.gz holds its output.
func renderOpenAPI() ([]byte, error) {
	paths := apidoc.Obj{}
	for _, r := range apiRoutes() {
		resp := apidoc.Obj{}
		if r.Response != "" {
			resp["200"] = apidoc.JSONResponse(r.Response)
		}
		for k, v := range r.Extra {
			resp[k] = v
		}
		codes := []string{"404", "405", "500"}
		if !r.Open {
			codes = append(codes, "401", "429")
		}
		if r.ClientAuth {
			codes = append(codes, "401", "429")
		}
		for _, code := range append(codes, r.Errs...) {
			resp[code] = apidoc.ProblemResponse(statusText[code])
			if r.OAuthErrors && code != "404" && code != "405" && code != "500" {
				resp[code] = apidoc.Obj{"description": statusText[code], "content": apidoc.Obj{"application/json": apidoc.Obj{"schema": apidoc.Ref("OAuthError")}}}
			}
		}
		if r.IDs {
			resp["308"] = apidoc.Obj{"description": "migrated id: empty body, Location = the URL with the new id, query kept",
				"headers": apidoc.Obj{"Location": apidoc.Obj{"schema": apidoc.Str(), "required": true}}}
		}
		if r.Response != "" && r.Method == "get" && etagged(r.Response) {
			resp["304"] = apidoc.Obj{"description": "not modified (If-None-Match)"}
		}
		op := apidoc.Obj{"summary": r.Summary, "operationId": operationID(r), "responses": resp, "tags": []string{tagOf(r.Path)}}
		if d := r.Deprecated; d != nil {
			op["deprecated"] = true
			headers := apidoc.Obj{"Deprecation": apidoc.Obj{"required": true, "schema": apidoc.Str(),
				"description": "RFC 9745: @ and the Unix time since which the route is obsolete, " + d.Header() + " (" + d.Since.Format(time.DateOnly) + ")"}}
			if d.Successor != "" {
				headers["Link"] = apidoc.Obj{"required": true, "schema": apidoc.Str(), "description": "the successor: <" + d.Successor + `>; rel="successor-version"`}
			}
			if ok, _ := resp["200"].(apidoc.Obj); ok != nil {
				ok = maps.Clone(ok)
				ok["headers"] = headers
				resp["200"] = ok
			}
		}
		if len(r.Params) > 0 {
			ps := make([]any, len(r.Params))
			for i, p := range r.Params {
				ps[i] = p
			}
			op["parameters"] = ps
		}
		if r.Body != "" {
			schema := apidoc.Ref(r.Body)
			if r.Form != nil {
				schema = r.Form
			}
			op["requestBody"] = apidoc.Obj{"required": true, "content": apidoc.Obj{r.BodyType: apidoc.Obj{"schema": schema}}}
		}
		if r.Open {
			op["security"] = []any{}
		}
		item, _ := paths[r.Path].(apidoc.Obj)
		if item == nil {
			item = apidoc.Obj{}
			paths[r.Path] = item
		}
		item[r.Method] = op
	}
	var tags []any
	var versions []string
	for _, in := range interfaces {
		tags = append(tags, apidoc.Obj{"name": in.name, "x-version": in.version,
			"description": in.name + " interface, description version " + in.version + " of " + in.date + " (spec §9)"})
		versions = append(versions, in.name+" "+in.version)
	}
	tags = append(tags, apidoc.Obj{"name": gatewayTag, "description": "plantd's own: authorization, the owner's consents, health, metrics, this document, the page"})
	doc := apidoc.Obj{
		"openapi": "3.1.0",
		"info": apidoc.Obj{"title": "plantd HTTP API", "version": strings.Join(versions, ", "),
			"description": "Monitoring, grid control and live data of the plants served by this gateway (spec/plant-api.md §4, DESIGN §4). " +
				"The version is each interface's description version (spec §9), also in its tag's x-version. " +
				"Measurement-set times are plant-local without offset; every other time is RFC 3339 UTC. Errors are RFC 9457 problem-JSON. " +
				"Obsolete routes are deprecated and answer a Deprecation header (RFC 9745) and a Link to their successor."},
		"tags":    tags,
		"servers": []any{apidoc.Obj{"url": "/"}},
		"paths":   paths,
		"components": apidoc.Obj{
			"schemas": oauth2.AddSchemas(schemas()),
			"securitySchemes": apidoc.Obj{
				"bearer": apidoc.Obj{"type": "http", "scheme": "bearer", "description": "static token (config, stored hashed) or OAuth2 access token"},
				"oauth2": apidoc.Obj{"type": "oauth2", "flows": apidoc.Obj{"clientCredentials": apidoc.Obj{"tokenUrl": "/oauth2/token", "scopes": apidoc.Obj{
					"standard": "read monitoring and live data", "installer": "also logs, grid-control writes and consumer modes", "gridoperator": "grid-control writes"}}}},
				"oauth2Code": apidoc.Obj{"type": "oauth2", "description": "authorization_code: the gateway's owner approves each request (plantd consent); PKCE S256 accepted; refresh tokens rotate on use and are revocable at /oauth2/revoke",
					"flows": apidoc.Obj{"authorizationCode": apidoc.Obj{"authorizationUrl": "/oauth2/auth", "tokenUrl": "/oauth2/token", "refreshUrl": "/oauth2/token", "scopes": apidoc.Obj{
						"offline_access": "a refresh token as well", "standard": "read monitoring and live data", "installer": "also logs, grid-control writes and consumer modes", "gridoperator": "grid-control writes"}}}},
			},
		},
		"security": []any{apidoc.Obj{"bearer": []any{}}, apidoc.Obj{"oauth2": []any{}}, apidoc.Obj{"oauth2Code": []any{}}},
	}
	return json.MarshalIndent(doc, "", " ")
}

func etagged(resp string) bool {
	switch resp {
	case "PlantInstallation", "Devices", "DevicesLean", "DeviceDetails", "Plant", "Stakeholders", "SetList", "MeasurementSet":
		return true
	}
	return false
}

func operationID(r apidoc.Route) string {
	var b strings.Builder
	b.WriteString(r.Method)
	for _, seg := range strings.Split(r.Path, "/") {
		seg = strings.Trim(seg, "{}")
		if seg == "" {
			continue
		}
		b.WriteString(strings.ToUpper(seg[:1]) + seg[1:])
	}
	return b.String()
}
