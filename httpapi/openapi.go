package httpapi

import (
	"encoding/json"
	"maps"
	"strings"

	"plantd/gridcontrol"
	"plantd/httpapi/oauth2"
)

// The OpenAPI 3.1 document of the API, built in code so that the route
// table and the document are kept together; openapi_test.go walks Gin's
// routes against it and validates real responses with kin-openapi.

type obj = map[string]any

func ref(name string) obj { return obj{"$ref": "#/components/schemas/" + name} }

func str() obj             { return obj{"type": "string"} }
func num() obj             { return obj{"type": "number"} }
func boolean() obj         { return obj{"type": "boolean"} }
func arr(items obj) obj    { return obj{"type": "array", "items": items} }
func enum(v ...string) obj { return obj{"type": "string", "enum": v} }

// object is a closed object schema with the given properties.
func object(props obj, required ...string) obj {
	o := obj{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		o["required"] = required
	}
	return o
}

func describe(o obj, d string) obj { o["description"] = d; return o }

// localTimeSchema is a plant-local time without offset.
func localTimeSchema() obj {
	return obj{"type": "string", "pattern": `^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$`,
		"description": "plant-local time without offset (the plant's timezone), as the cloud API: OneMinute, FiveMinutes, " +
			"FifteenMinutes and OneHour rows carry the END of their interval (a Day of FiveMinutes runs 00:05:00 .. next day 00:00:00); " +
			"OneDay, OneMonth and OneYear rows the day, month or year they stand for (00:00:00 of its first day); " +
			"Recent is one row labelled with the end of the newest interval it holds"}
}

// noOffsetSchema is a time written without offset (LocalDateTime).
func noOffsetSchema(d string) obj {
	return obj{"type": "string", "pattern": `^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$`, "description": d}
}

// windowTimeSchema is the start or end of a posted window: RFC 3339 with
// offset, or relative to the gateway's clock ("+10m").
func windowTimeSchema() obj {
	return obj{"type": "string", "anyOf": []any{obj{"format": "date-time"}, obj{"pattern": `^\+[0-9.]+(ns|us|µs|ms|s|m|h)([0-9.]+(ns|us|µs|ms|s|m|h))*$`}},
		"description": "RFC 3339 with offset, or relative to the gateway's clock when the request arrives: + and a duration (+10s, +2m, +1h30m)"}
}

func utcTimeSchema() obj {
	return obj{"type": "string", "format": "date-time", "pattern": `Z$`, "description": "RFC 3339, UTC"}
}

func schemas() obj {
	indexed := arr(object(obj{"index": str(), "value": num()}, "index", "value"))
	setRow := obj{"type": "object", "required": []string{"time"},
		"properties":           obj{"time": localTimeSchema()},
		"additionalProperties": obj{"oneOf": []any{num(), indexed}},
		"description":          "one interval; only measured fields are present"}
	balanceFields := obj{}
	for _, f := range []string{"pvGeneration", "gridFeedIn", "gridConsumption", "directConsumption", "selfConsumption",
		"selfSupply", "totalConsumption", "totalGeneration", "batteryCharging", "batteryDischarging",
		"batteryStateOfCharge", "dieselGeneration", "autarkyRate", "selfConsumptionRate"} {
		balanceFields[f] = num()
	}
	balanceFields["time"] = localTimeSchema()
	mixFields := obj{"time": localTimeSchema(), "pvConsumptionRate": num(), "batteryConsumptionRate": num(),
		"gridConsumptionRate": num(), "totalConsumption": num()}
	dataError := object(obj{"code": str(), "message": str(),
		"devices": arr(object(obj{"deviceId": str(), "reason": enum("Stale", "TimedOut", "Unreachable", "NoData", "NoValue")}, "deviceId", "reason"))},
		"code", "message", "devices")
	liveEnv := func(item obj, device bool) obj {
		props := obj{"plant": ref("Plant"), "setType": str(), "resolution": str(),
			"set":   obj{"type": "array", "items": item, "minItems": 1, "maxItems": 1},
			"error": obj{"oneOf": []any{obj{"type": "null"}, ref("DataError")}}}
		req := []string{"plant", "setType", "set", "error"}
		if device {
			props["device"] = ref("DeviceRef")
			req = append(req, "device")
		}
		return object(props, req...)
	}
	optNum := num()
	orientation := object(obj{"azimuth": obj{"type": "number", "minimum": 0, "maximum": 360}, "collectorSlope": obj{"type": "number", "minimum": 0, "maximum": 90}})
	installation := object(obj{
		"peakPower": optNum, "acNominalPower": num(),
		"calculatedAcNominalPower": describe(num(), "sum of the rated AC power of the active inverters, W"),
		"calcAcNominalPower":       describe(num(), "the same value under the cloud API's other name"),
		"dcPowerInputMax":          num(), "co2SavingsFactor": describe(num(), "g/kWh"),
		"startUpUtc": noOffsetSchema("the start-up day, UTC, written without offset as the cloud does (2021-11-03T00:00:00)"), "orientation": orientation,
		"pvModuleAreas": describe(arr(object(obj{"name": str(), "azimuth": obj{"type": "number", "minimum": 0, "maximum": 360},
			"collectorSlope": num(), "peakPower": num(), "moduleCount": obj{"type": "integer"}}, "name")), "newer-platform plants only (modelled)"),
	}, "co2SavingsFactor")
	address := object(obj{"country": str(), "federalState": str(), "city": str(), "zipCode": str(), "street": str(),
		"streetNo": str(), "longitude": num(), "latitude": num()})
	logs := func(device bool) obj {
		props := obj{"logs": arr(object(obj{"time": utcTimeSchema(), "level": str(), "code": str(), "message": str(), "deviceId": str()},
			"time", "level", "code", "message")), "next": describe(str(), "cursor of the next page")}
		if device {
			props["device"] = ref("DeviceRef")
			return plantHead(props, "logs", "device")
		}
		return plantHead(props, "logs")
	}
	liveDevices := func(health []string) obj {
		return plantHead(obj{"devices": arr(object(obj{"deviceId": str(), "name": str(), "type": str(),
			"healthStatus": enum(health...), "lastUpdateUtc": utcTimeSchema(),
			"switchingState": describe(enum("On", "Off"), "consumer devices only: the output as last read; absent while the consumer is offline"),
			"consumption":    describe(num(), "consumer devices only: the power now, W, metered or estimated from the rated power (see GET /gateway/v1/consumers); absent when unknown or offline")},
			"deviceId", "name", "type", "healthStatus"))}, "devices")
	}
	s := obj{
		"Problem": object(obj{"type": str(), "title": str(), "status": obj{"type": "integer"}, "detail": str(),
			"instance": str(), "code": str(), "message": str(), "requestId": str(), "error": describe(str(), "OAuth2 error code (token endpoint)"),
			"errors": arr(object(obj{"field": str(), "message": str()}, "field", "message")),
			"reasons": describe(arr(object(obj{"command": str(), "code": str(), "message": str()}, "command", "code", "message")),
				"422 not-eligible: the eligibility reason of each refused command"),
			"retryable": describe(obj{"type": "boolean"},
				"422 not-eligible: every refusal is DevicesOffline or DevicesNotDiscovered (the same request may pass once the devices answer)")},
			"type", "title", "status", "code", "message"),
		"Plant":        object(obj{"plantId": str(), "name": str(), "description": str(), "timezone": describe(str(), "IANA time zone")}, "plantId", "name", "timezone"),
		"DeviceRef":    object(obj{"deviceId": str(), "name": str(), "timezone": str()}, "deviceId", "name", "timezone"),
		"Installation": installation,
		"PlantList": object(obj{
			"plants": arr(object(obj{"plantId": str(), "name": str(), "description": str(), "timezone": str(),
				"installation": ref("Installation"),
				"location":     object(obj{"currencyCode3": str(), "address": address})},
				"plantId", "name", "timezone", "installation")),
			"partial": describe(object(obj{"reason": str(), "missing": arr(enum("classic", "newer"))}, "reason", "missing"),
				"present when the devices of one platform generation are unreachable (plantd's)"),
		}, "plants"),
		"PlantInstallation": plantHead(obj{"installation": ref("Installation")}, "installation"),
		"Configuration": plantHead(obj{"plantWithBattery": boolean(), "plantWithLiveData": boolean(),
			"connectedService": object(obj{"status": str(), "since": utcTimeSchema()}, "status")},
			"plantWithBattery", "plantWithLiveData", "connectedService"),
		"Device": object(obj{"deviceId": str(), "name": str(), "timezone": str(),
			"type":    enum("Solar Inverters", "Battery Inverter", "Energy Meter", "Monitoring and control", "Sensor technology", "Consumer", "Unknown"),
			"product": str(), "productId": describe(obj{"type": "integer"}, "the vendor's product id, when configured"),
			"serial": str(), "vendor": str(), "generatorPower": num(), "generatorPowerDc": num(),
			"isActive": boolean(), "deactivatedAt": noOffsetSchema("plant-local time without offset, as the cloud sends it"),
			"isSmartConnectedReady": boolean()},
			"deviceId", "name", "timezone", "type", "product", "vendor", "isActive", "isSmartConnectedReady"),
		"Devices":       plantHead(obj{"devices": arr(ref("Device"))}, "devices"),
		"DevicesLean":   object(obj{"devices": arr(ref("Device"))}, "devices"),
		"DeviceDetails": describe(plantHead(obj{"details": ref("Device")}, "details"), "the device's plant and its device object (modelled)"),
		"Stakeholders": plantHead(obj{"stakeholders": arr(object(obj{"role": enum("owner", "installer", "operator", "connectedServiceProvider"),
			"name": str(), "email": str(), "phone": str()}, "role", "name"))}, "stakeholders"),
		"PlantLogs":  logs(false),
		"DeviceLogs": logs(true),
		"Communication": plantHead(obj{"devices": arr(object(obj{"deviceId": str(),
			"status":         enum("Ok", "Partial", "TimedOut", "Unreachable"),
			"lastContactUtc": utcTimeSchema(), "lastError": str(), "successRate": obj{"type": "number", "minimum": 0, "maximum": 1}},
			"deviceId", "status", "successRate"))}, "devices"),
		"SetList": plantHead(obj{"device": ref("DeviceRef"), "sets": arr(enum("EnergyAndPowerPv", "EnergyAndPowerInOut",
			"EnergyAndPowerConsumption", "EnergyAndPowerBattery", "PowerAc", "PowerDc", "EnergyDc", "EnergyMix", "Sensor"))}, "device", "sets"),
		"SetRow": setRow,
		"MeasurementSet": plantHead(obj{"device": ref("DeviceRef"), "setType": str(),
			"resolution": enum("OneMinute", "FiveMinutes", "FifteenMinutes", "OneHour", "OneDay", "OneMonth", "OneYear"),
			"set":        arr(ref("SetRow")), "total": ref("SetRow")}, "setType", "resolution", "set"),
		"DataError":         dataError,
		"LiveEnergyBalance": liveEnv(object(balanceFields, "time"), false),
		"LiveEnergyMix":     liveEnv(object(mixFields, "time"), true),
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
func statusSchemas() obj {
	return obj{
		"Ready": object(obj{"ready": boolean(), "reason": str()}, "ready"),
		"Health": object(obj{"status": describe(enum("Ok", "Degraded", "Error"), "Degraded (still 200): some active devices are unreachable"),
			"storage": object(obj{"status": str(), "error": str(),
				"bytesWritten":  describe(obj{"type": "integer"}, "bytes the plantd process sent to the block layer since it started (the storage's wear; absent where the kernel does not count it)"),
				"databaseBytes": describe(obj{"type": "integer"}, "size of the database file plus its WAL")}, "status"),
			"devices": object(obj{"total": obj{"type": "integer"}, "ok": obj{"type": "integer"}, "unreachable": obj{"type": "integer"}}),
			"mqtt": object(obj{"status": str(), "since": utcTimeSchema(), "lastError": str(),
				"streams": arr(object(obj{"stream": str(), "depth": obj{"type": "integer"}, "oldestUnsentAgeSeconds": num(),
					"dropped": obj{"type": "integer"}}, "stream", "depth"))}, "status")}, "status", "storage", "devices", "mqtt"),
	}
}

// plantHead is an answer object headed by its plant.
func plantHead(extra obj, req ...string) obj {
	extra["plant"] = ref("Plant")
	return object(extra, append([]string{"plant"}, req...)...)
}

// gridControlSchemas are the schemas of /gridcontrol/v1.
func gridControlSchemas() obj {
	return obj{
		"Schedules":       plantHead(obj{"schedules": arr(ref("Schedule"))}, "schedules"),
		"ScheduleCreated": plantHead(obj{"schedule": ref("Schedule")}, "schedule"),
		"Schedule": describe(object(obj{"scheduleId": str(), "plantId": str(), "createdAt": obj{"type": "string", "format": "date-time"},
			"createdBy": describe(str(), "the credential that sent it and its role"),
			"role":      describe(enum("installer", "gridoperator"), "the role of that credential: windows of one command from different roles never overwrite each other"),
			"commands": arr(describe(object(obj{"command": ref("Command"), "start": obj{"type": "string", "format": "date-time"},
				"end": obj{"type": "string", "format": "date-time"}, "value": num(), "unit": enum("%", "W", "V", "cos"), "curve": ref("Curve"),
				"status":       describe(enum("pending", "active", "done", "superseded", "overridden", "failed"), "superseded: newer windows of the same role cover it; overridden: open, but another role's window of the command governs now (the grid operator's, or a more restrictive limit)"),
				"overriddenBy": describe(str(), "the scheduleId whose window governs instead (status overridden)"),
				"reason":       describe(str(), "why the command failed or was applied late"),
				"appliedAt":    obj{"type": "string", "format": "date-time"}, "late": boolean(),
				"partial":   describe(boolean(), "some of the plant's active inverters do not act on the command (plantd's); status keeps its meaning"),
				"coverage":  describe(num(), "share 0..1 of the active inverters' rated power that acts on the command (only on partial windows)"),
				"inverters": describe(arr(ref("InverterCoverage")), "each active inverter: whether it acts and why not (only on partial windows)"),
				"repeat":    describe(str(), "a recurring command's cron spec (plantd's): start and end are then its current window (open now, or the next one)"),
				"duration":  describe(str(), "the length of each window of a recurring command, a Go duration (plantd's)"),
				"until":     describe(utcTimeSchema(), "no window of the recurring command starts at or after it (plantd's)"),
				"next":      describe(arr(ref("Occurrence")), "the next windows of a recurring command after the current one, at most three (plantd's)"),
				"finished":  describe(arr(ref("Occurrence")), "the ended windows of a recurring command, oldest first, within the time finished schedules are kept (plantd's; include=finished only)"),
				"writes":    describe(arr(ref("AuditWrite")), "the audit of the window: the writes that set or changed the control on each device, read back (plantd's; include=finished only)"),
				"cancelled": describe(boolean(), "the schedule was cancelled (DELETE) before the window ended: end is the time of cancellation, or the start of a window that never started (plantd's)")},
				"command", "start", "end", "status"), "one window of a command and its status"))},
			"scheduleId", "plantId", "createdAt", "commands"), "a stored schedule (plantd's shape, DESIGN §6)"),
		"Occurrence": describe(object(obj{"start": utcTimeSchema(), "end": utcTimeSchema(),
			"status": describe(enum("pending", "active", "done", "superseded", "overridden", "failed"), "next: absent; finished: done, superseded or failed"),
			"reason": str(), "appliedAt": utcTimeSchema(), "late": boolean(),
			"writes": arr(ref("AuditWrite"))}, "start", "end"), "one window of a recurring command (plantd's)"),
		"AuditWrite": describe(object(obj{"deviceId": str(), "model": describe(obj{"type": "integer"}, "the SunSpec model written"),
			"what":       describe(str(), "the write as the plant log names it (model 704 WMaxLimPct 40 %)"),
			"readBackAt": describe(utcTimeSchema(), "when the device's answer to the read-back came"),
			"points": arr(object(obj{"point": describe(str(), "the SunSpec point (top level of the model)"), "value": describe(num(), "the value written"),
				"readBack": describe(num(), "the value read back right after the write (equal, or the write would have failed; a trigger such as AdptCrvReq may differ)")}, "point", "value"))},
			"deviceId", "model", "what", "readBackAt"), "one write of a window to a device with its read-back (plantd's)"),
		"ScheduleRequest": obj{"type": "object", "additionalProperties": false, "required": []string{"commands"},
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
			"properties": obj{"commands": obj{"type": "array", "minItems": 1, "maxItems": 1500, "items": object(obj{"command": ref("Command"),
				"start": windowTimeSchema(), "end": windowTimeSchema(),
				"value": num(), "unit": enum("%", "W", "V", "cos"), "curve": ref("Curve"),
				"repeat":   describe(str(), "cron spec of five fields, optionally after CRON_TZ=<zone> (plantd's): a recurring command, with duration instead of end"),
				"duration": describe(str(), "Go duration of each window of a recurring command (plantd's)"),
				"until":    describe(windowTimeSchema(), "no window of a recurring command starts at or after it (plantd's)")}, "command")}},
			"examples": []any{
				obj{"commands": []any{obj{"command": "opModMaxLimW", "repeat": "CRON_TZ=Europe/Berlin 0 11 * * *", "duration": "4h", "value": 60, "unit": "%"}}},
				obj{"commands": []any{
					obj{"command": "opModMaxLimW", "start": "2026-11-24T10:00:00+01:00", "end": "2026-11-24T12:00:00+01:00", "value": 60, "unit": "%"},
					obj{"command": "opModMaxLimW", "start": "2026-11-24T12:00:00+01:00", "end": "2026-11-24T14:00:00+01:00", "value": 40, "unit": "%"}}},
				obj{"commands": []any{obj{"command": "opModVoltVar", "start": "2026-11-24T10:00:00+01:00", "end": "2026-11-24T18:00:00+01:00",
					"curve": obj{"points": []any{obj{"x": 90, "y": 44}, obj{"x": 96, "y": 0}, obj{"x": 104, "y": 0}, obj{"x": 110, "y": -44}}}}}},
				obj{"commands": []any{obj{"command": "opModVoltVar", "start": "2026-11-24T10:00:00+01:00", "end": "2026-11-24T18:00:00+01:00", "unit": "V",
					"curve": obj{"points": []any{obj{"x": 207, "y": 44}, obj{"x": 220, "y": 0}, obj{"x": 240, "y": 0}, obj{"x": 253, "y": -44}}}}}},
			}},
		"Curve": object(obj{"points": arr(object(obj{"x": num(), "y": num()}, "x", "y")),
			"params": obj{"type": "object", "additionalProperties": num()}}),
		"Command": enum(commandNames()...),
		"EligibilityRequest": object(obj{"plantId": str(), "deviceId": str(), "meterId": str(), "serialNumber": str(),
			"commands": arr(ref("Command"))}, "commands"),
		"EligibleCommandsRequest": object(obj{"plantId": str(), "deviceId": str(), "meterId": str(), "serialNumber": str()}),
		"EligibilityResult": plantHead(obj{"checkedAt": utcTimeSchema(), "results": arr(object(obj{"command": ref("Command"),
			"devices":  describe(arr(str()), "ids of the inverters that carry the command now"),
			"eligible": boolean(), "reasons": arr(ref("Reason")),
			"partial":   describe(boolean(), "eligible, but some active inverters do not act on the command (plantd's)"),
			"coverage":  describe(num(), "share 0..1 of the active inverters' rated power that acts on the command (plantd's)"),
			"inverters": describe(arr(ref("InverterCoverage")), "every active inverter: whether it acts on the command and why not (plantd's)")},
			"command", "eligible"))},
			"checkedAt", "results"),
		"Reason": object(obj{"code": str(), "message": str()}, "code", "message"),
		"InverterCoverage": describe(object(obj{"deviceId": str(), "acts": boolean(), "reason": ref("Reason"), "ratedPowerW": num(), "note": ref("Reason")}, "deviceId", "acts"),
			"acts: the inverter carries the command (an offline one once it is back: reason DevicesOffline); otherwise reason says why not "+
				"(NotOfferedOnNewerPlatform, NotOfferedOnClassicPlatform, NotSupportedByDevices, DevicesNotDiscovered, NoGridMeter). "+
				"note: what an acting inverter cannot do for the command (NoReversionToDefault: a limit on a classic model 123 reverts to no limit, "+
				"so where the inverter's default is a limit plantd writes windows without a reversion time and the window's limit stays if plantd stops)"),
		"EligibleCommands": plantHead(obj{"eligibleCommands": arr(ref("Command"))}, "eligibleCommands"),
		"Settings": plantHead(obj{"settingsType": enum(gridcontrol.SettingsTypes...), "configurations": arr(object(obj{
			"type":      describe(str(), "the configuration's active name when an inverter has it enabled, its Deactivated form otherwise"),
			"supported": boolean(), "devices": arr(str()), "active": boolean(),
			"values": arr(object(obj{"device": str(), "model": obj{"type": "integer"}, "enabled": boolean(),
				"limitPct": num(), "powerFactor": num(), "curve": ref("Curve"), "controlledByPlantd": boolean()},
				"device", "model", "enabled", "controlledByPlantd"))},
			"type", "supported", "devices", "active", "values"))}, "settingsType", "configurations"),
	}
}

func commandNames() []string {
	out := make([]string, 0, len(gridcontrol.Commands))
	for _, c := range gridcontrol.Commands {
		out = append(out, c.Name)
	}
	return out
}

// problemResponse is a response of problem-JSON.
func problemResponse(desc string) obj {
	return obj{"description": desc, "content": obj{contentTypeProblem: obj{"schema": ref("Problem")}}}
}

func jsonResponse(schema string) obj {
	return obj{"description": "OK", "content": obj{"application/json": obj{"schema": ref(schema)}}}
}

func param(name, in, desc string, schema obj, required bool) obj {
	return obj{"name": name, "in": in, "description": desc, "schema": schema, "required": required}
}

// route is one operation of the document.
type route struct {
	method, path, summary, response string
	params                          []obj
	// errs lists the problem statuses besides 401/404/405/429/500.
	errs []string
	// body names the request body schema and its media type.
	body, bodyType string
	// ids: the route has a plant or device id (308, 404).
	ids  bool
	open bool // no auth
	// extra responses
	extra obj
	// form is the schema of a form-encoded body (bodyType
	// application/x-www-form-urlencoded).
	form obj
	// oauthErrs: the route's errors are RFC 6749 §5.2 JSON (OAuthError),
	// not problem-JSON; oauthAuth: it authenticates the client (401, and
	// 429 for a source with too many failed logins).
	oauthErrs, oauthAuth bool
}

func setParams(period bool) []obj {
	ps := []obj{
		param("Date", "query", "YYYY-MM-DD for Day and Week, YYYY-MM for Month, YYYY for Year, none for Recent and Total (also accepted as date); default: the current period", str(), false),
		param("WithTotal", "query", "adds total", enum("true", "false", "True", "False", "TRUE", "FALSE"), false),
		param("ReturnEnergyValues", "query", "Wh per interval instead of W for EnergyAndPower* sets", enum("true", "false", "True", "False", "TRUE", "FALSE"), false),
	}
	if period {
		ps = append(ps, param("period", "path", "Recent | Day | Week | Month | Year | Total, any letter case", str(), true))
	}
	return ps
}

func logParams() []obj {
	return []obj{
		param("From", "query", "RFC 3339 start (inclusive)", obj{"type": "string", "format": "date-time"}, false),
		param("To", "query", "RFC 3339 end", obj{"type": "string", "format": "date-time"}, false),
		param("cursor", "query", "the next of the previous page", str(), false),
		param("limit", "query", "1..1000, default 100", obj{"type": "integer", "minimum": 1, "maximum": 1000}, false),
	}
}

var (
	plantIDParam  = param("plantId", "path", "plant id", str(), true)
	deviceIDParam = param("deviceId", "path", "device id", str(), true)
)

// apiRoutes lists every operation; routes() registers the same set.
func apiRoutes() []route {
	var rs []route
	add := func(r route) { rs = append(rs, r) }
	add(route{method: "get", path: "/monitoring/v1/plants", summary: "Plant list", response: "PlantList"})
	add(route{method: "get", path: "/monitoring/v1/plants/{plantId}", summary: "The bare plant object (plantId, name, description, timezone)",
		response: "Plant", params: []obj{plantIDParam}, ids: true})
	add(route{method: "get", path: "/monitoring/v1/plants/{plantId}/devices/lean", summary: "Devices without the plant wrapper; deactivated ones only with WithDeactivatedDevices=true",
		response: "DevicesLean", params: []obj{plantIDParam, param("WithDeactivatedDevices", "query", "also list deactivated devices",
			enum("true", "false", "True", "False", "TRUE", "FALSE"), false)}, ids: true, errs: []string{"400"}})
	add(route{method: "get", path: "/monitoring/v1/devices/{deviceId}", summary: "A device: its plant and its device object (modelled)",
		response: "DeviceDetails", params: []obj{deviceIDParam}, ids: true})
	for _, r := range []struct{ seg, summary, resp string }{
		{"installation", "Installation data", "PlantInstallation"},
		{"configuration", "Configuration", "Configuration"},
		{"devices", "Devices", "Devices"},
		{"stakeholders", "Stakeholders", "Stakeholders"},
		{"communication", "Communication status", "Communication"},
	} {
		add(route{method: "get", path: "/monitoring/v1/plants/{plantId}/" + r.seg, summary: r.summary, response: r.resp, params: []obj{plantIDParam}, ids: true})
	}
	add(route{method: "get", path: "/monitoring/v1/plants/{plantId}/logs", summary: "Plant log messages (installer)", response: "PlantLogs",
		params: append([]obj{plantIDParam}, logParams()...), ids: true, errs: []string{"400", "403"}})
	add(route{method: "get", path: "/monitoring/v1/plants/{plantId}/measurements/sets/EnergyBalance", summary: "Energy balance (Recent)",
		response: "MeasurementSet", params: append([]obj{plantIDParam}, setParams(false)...), ids: true, errs: []string{"400"}})
	add(route{method: "get", path: "/monitoring/v1/plants/{plantId}/measurements/sets/EnergyBalance/{period}", summary: "Energy balance of a period",
		response: "MeasurementSet", params: append([]obj{plantIDParam}, setParams(true)...), ids: true, errs: []string{"400"}})
	setTypeParam := param("setType", "path", "the set type in any letter case (energybalance, POWERAC, ...)", str(), true)
	add(route{method: "get", path: "/monitoring/v1/plants/{plantId}/measurements/sets/{setType}", summary: "Energy balance (Recent), set type in any letter case",
		response: "MeasurementSet", params: append([]obj{plantIDParam, setTypeParam}, setParams(false)...), ids: true, errs: []string{"400"}})
	add(route{method: "get", path: "/monitoring/v1/plants/{plantId}/measurements/sets/{setType}/{period}", summary: "Energy balance of a period, set type in any letter case",
		response: "MeasurementSet", params: append([]obj{plantIDParam, setTypeParam}, setParams(true)...), ids: true, errs: []string{"400"}})
	add(route{method: "get", path: "/monitoring/v2/plants/{plantId}/measurements/sets/EnergyBalance/{period}", summary: "Energy balance of a period (v2, the same as v1)",
		response: "MeasurementSet", params: append([]obj{plantIDParam}, setParams(true)...), ids: true, errs: []string{"400"}})
	add(route{method: "get", path: "/monitoring/v2/plants/{plantId}/measurements/sets/{setType}/{period}", summary: "Energy balance of a period (v2), set type in any letter case",
		response: "MeasurementSet", params: append([]obj{plantIDParam, setTypeParam}, setParams(true)...), ids: true, errs: []string{"400"}})
	add(route{method: "get", path: "/monitoring/v1/devices/{deviceId}/logs", summary: "Device log messages (installer)", response: "DeviceLogs",
		params: append([]obj{deviceIDParam}, logParams()...), ids: true, errs: []string{"400", "403"}})
	add(route{method: "get", path: "/monitoring/v1/devices/{deviceId}/measurements/sets", summary: "Measurement sets of a device", response: "SetList",
		params: []obj{deviceIDParam}, ids: true})
	for _, st := range deviceSetTypes {
		p := "/monitoring/v1/devices/{deviceId}/measurements/sets/" + string(st)
		add(route{method: "get", path: p, summary: string(st) + " (Recent)", response: "MeasurementSet", params: append([]obj{deviceIDParam}, setParams(false)...), ids: true, errs: []string{"400"}})
		add(route{method: "get", path: p + "/{period}", summary: string(st) + " of a period", response: "MeasurementSet", params: append([]obj{deviceIDParam}, setParams(true)...), ids: true, errs: []string{"400"}})
	}
	add(route{method: "get", path: "/monitoring/v1/devices/{deviceId}/measurements/sets/{setType}", summary: "A device set (Recent), set type in any letter case",
		response: "MeasurementSet", params: append([]obj{deviceIDParam, setTypeParam}, setParams(false)...), ids: true, errs: []string{"400"}})
	add(route{method: "get", path: "/monitoring/v1/devices/{deviceId}/measurements/sets/{setType}/{period}", summary: "A device set of a period, set type in any letter case",
		response: "MeasurementSet", params: append([]obj{deviceIDParam, setTypeParam}, setParams(true)...), ids: true, errs: []string{"400"}})
	add(route{method: "get", path: "/monitoring/v1/devices/{deviceId}/measurement/sets/EnergyMix/{period}", summary: "Energy mix of a period (spec's singular path)",
		response: "MeasurementSet", params: append([]obj{deviceIDParam}, setParams(true)...), ids: true, errs: []string{"400"}})

	add(route{method: "get", path: "/gridcontrol/v1/plants/{plantId}/schedules", summary: "Schedules (fallbacks hidden)", response: "Schedules",
		params: []obj{plantIDParam, param("include", "query", "finished: also the audit, each window's writes with their read-back and a recurring command's finished windows (plantd's)", enum("finished"), false)},
		ids:    true, errs: []string{"400"}})
	add(route{method: "delete", path: "/gridcontrol/v1/plants/{plantId}/schedules/{scheduleId}", summary: "Cancel a schedule (installer, gridoperator; plantd's): open windows end now, pending ones and later occurrences never start; it stays listed",
		params: []obj{plantIDParam, param("scheduleId", "path", "schedule id", str(), true)}, ids: true, errs: []string{"403", "501"},
		extra: obj{"204": obj{"description": "cancelled"}}})
	add(route{method: "post", path: "/gridcontrol/v1/plants/{plantId}/schedules", summary: "Create or overwrite schedules (installer, gridoperator): 201 with the stored schedule",
		params: []obj{plantIDParam, param("skipEligibilityCheck", "query", "skip the eligibility check", enum("true", "false"), false),
			param("requireAll", "query", "all or nothing: 422 for a command that not every active inverter acts on (also with skipEligibilityCheck); without it such a command is stored with its windows marked partial (plantd's)", enum("true", "false"), false)},
		body: "ScheduleRequest", bodyType: "application/json", ids: true, errs: []string{"400", "403", "413", "415", "422", "501"},
		extra: obj{"201": obj{"description": "stored and armed", "content": obj{"application/json": obj{"schema": ref("ScheduleCreated")}}}}})
	add(route{method: "post", path: "/gridcontrol/v1/plants/eligibilityCheck", summary: "Eligibility check; a migrated plantId in the body is corrected internally",
		params:   []obj{param("requireAll", "query", "judge as POST schedules with requireAll=true: a partial command is not eligible (reason NotEveryInverter) (plantd's)", enum("true", "false"), false)},
		response: "EligibilityResult", body: "EligibilityRequest", bodyType: "application/json", errs: []string{"400", "413", "415"}})
	add(route{method: "post", path: "/gridcontrol/v1/plants/eligibleCommands", summary: "Eligible commands (obsolete)",
		response: "EligibleCommands", body: "EligibleCommandsRequest", bodyType: "application/json", errs: []string{"400", "413", "415"}})
	add(route{method: "get", path: "/gridcontrol/v1/plants/{id}/settings/{settingsType}", summary: "Current grid settings of one type",
		response: "Settings", params: []obj{param("id", "path", "plant id", str(), true), param("settingsType", "path", "settings type", enum(gridcontrol.SettingsTypes...), true)},
		ids: true, errs: []string{"400"}})

	add(route{method: "get", path: "/live/v1/plants/{plantId}/measurements/sets/EnergyBalance", summary: "Live energy balance", response: "LiveEnergyBalance", params: []obj{plantIDParam}, ids: true})
	add(route{method: "get", path: "/live/v1/devices/{deviceId}/measurement/sets/EnergyMix", summary: "Live energy mix (of the device's plant)", response: "LiveEnergyMix", params: []obj{deviceIDParam}, ids: true})
	add(route{method: "get", path: "/live/v1/plants/{plantId}/devices", summary: "Live device list v1 (obsolete)", response: "LiveDevicesV1", params: []obj{plantIDParam}, ids: true})
	add(route{method: "get", path: "/live/v2/plants/{plantId}/devices", summary: "Live device list v2", response: "LiveDevicesV2", params: []obj{plantIDParam}, ids: true})
	add(route{method: "get", path: "/live/v1/devices/{deviceId}", summary: "Live values of one device with units, health, communication and SunSpec models (plantd's)", response: "LiveDevice", params: []obj{deviceIDParam}, ids: true})

	consumerID := param("deviceId", "path", "the consumer's device id", str(), true)
	add(route{method: "get", path: "/gateway/v1/consumers", summary: "The home energy manager's consumers: settings, output, consumption and why (plantd's); empty when the gateway has none",
		response: "Consumers", params: []obj{param("plantId", "query", "only the consumers of this plant (404 when unknown; a migrated id answers for the new one; empty: all)", str(), false)}})
	add(route{method: "get", path: "/gateway/v1/consumers/{deviceId}", summary: "One consumer, as in the list (plantd's)",
		response: "Consumer", params: []obj{consumerID}, ids: true})
	add(route{method: "put", path: "/gateway/v1/consumers/{deviceId}/mode", summary: "Set a consumer's mode (installer, gridoperator): Auto, On or Off; 200 with the consumer after the change (plantd's)",
		response: "Consumer", params: []obj{consumerID}, body: "ConsumerModeRequest", bodyType: "application/json", ids: true,
		errs: []string{"400", "403", "413", "415", "503"}})

	for _, o := range oauth2.Routes() { // the authorization server's
		rs = append(rs, route{method: o.Method, path: o.Path, summary: o.Summary, response: o.Response, params: o.Params,
			errs: o.Errs, body: o.Body, bodyType: o.BodyType, form: o.Form, open: o.Open, extra: o.Extra,
			oauthErrs: o.OAuthErrors, oauthAuth: o.ClientAuth})
	}
	add(route{method: "get", path: "/healthz", summary: "Health of storage, devices and MQTT (loopback only)", response: "Health", open: true,
		errs: []string{"403"}, extra: obj{"503": obj{"description": "unhealthy", "content": obj{"application/json": obj{"schema": ref("Health")}}}}})
	add(route{method: "get", path: "/readyz", summary: "Readiness: storage works and every active device answered once or was given up on as offline (loopback only)", response: "Ready", open: true,
		errs: []string{"403"}, extra: obj{"503": obj{"description": "not ready, with the reason", "content": obj{"application/json": obj{"schema": ref("Ready")}}}}})
	add(route{method: "get", path: "/metrics", summary: "Prometheus metrics (loopback only)", open: true, errs: []string{"403"},
		extra: obj{"200": obj{"description": "Prometheus text format", "content": obj{"text/plain": obj{"schema": str()}}}}})
	add(route{method: "get", path: "/openapi.json", summary: "This document", open: true,
		extra: obj{"200": obj{"description": "OpenAPI 3.1", "content": obj{"application/json": obj{"schema": obj{"type": "object"}}}}}})
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

// buildOpenAPI renders the document.
func buildOpenAPI() ([]byte, error) {
	paths := obj{}
	for _, r := range apiRoutes() {
		resp := obj{}
		if r.response != "" {
			resp["200"] = jsonResponse(r.response)
		}
		for k, v := range r.extra {
			resp[k] = v
		}
		codes := []string{"404", "405", "500"}
		if !r.open {
			codes = append(codes, "401", "429")
		}
		if r.oauthAuth {
			codes = append(codes, "401", "429")
		}
		for _, code := range append(codes, r.errs...) {
			resp[code] = problemResponse(statusText[code])
			if r.oauthErrs && code != "404" && code != "405" && code != "500" {
				resp[code] = obj{"description": statusText[code], "content": obj{"application/json": obj{"schema": ref("OAuthError")}}}
			}
		}
		if r.ids {
			resp["308"] = obj{"description": "migrated id: empty body, Location = the URL with the new id, query kept",
				"headers": obj{"Location": obj{"schema": str(), "required": true}}}
		}
		if r.response != "" && r.method == "get" && etagged(r.response) {
			resp["304"] = obj{"description": "not modified (If-None-Match)"}
		}
		op := obj{"summary": r.summary, "operationId": operationID(r), "responses": resp}
		if len(r.params) > 0 {
			ps := make([]any, len(r.params))
			for i, p := range r.params {
				ps[i] = p
			}
			op["parameters"] = ps
		}
		if r.body != "" {
			schema := ref(r.body)
			if r.form != nil {
				schema = r.form
			}
			op["requestBody"] = obj{"required": true, "content": obj{r.bodyType: obj{"schema": schema}}}
		}
		if r.open {
			op["security"] = []any{}
		}
		item, _ := paths[r.path].(obj)
		if item == nil {
			item = obj{}
			paths[r.path] = item
		}
		item[r.method] = op
	}
	doc := obj{
		"openapi": "3.1.0",
		"info": obj{"title": "plantd HTTP API", "version": "1.0.0",
			"description": "Monitoring, grid control and live data of the plants served by this gateway (spec/plant-api.md §4, DESIGN §4). " +
				"Measurement-set times are plant-local without offset; every other time is RFC 3339 UTC. Errors are RFC 9457 problem-JSON."},
		"servers": []any{obj{"url": "/"}},
		"paths":   paths,
		"components": obj{
			"schemas": oauth2.AddSchemas(schemas()),
			"securitySchemes": obj{
				"bearer": obj{"type": "http", "scheme": "bearer", "description": "static token (config, stored hashed) or OAuth2 access token"},
				"oauth2": obj{"type": "oauth2", "flows": obj{"clientCredentials": obj{"tokenUrl": "/oauth2/token", "scopes": obj{
					"standard": "read monitoring and live data", "installer": "also logs, grid-control writes and consumer modes", "gridoperator": "grid-control writes"}}}},
				"oauth2Code": obj{"type": "oauth2", "description": "authorization_code: the gateway's owner approves each request (plantd consent); PKCE S256 accepted; refresh tokens rotate on use and are revocable at /oauth2/revoke",
					"flows": obj{"authorizationCode": obj{"authorizationUrl": "/oauth2/auth", "tokenUrl": "/oauth2/token", "refreshUrl": "/oauth2/token", "scopes": obj{
						"offline_access": "a refresh token as well", "standard": "read monitoring and live data", "installer": "also logs, grid-control writes and consumer modes", "gridoperator": "grid-control writes"}}}},
			},
		},
		"security": []any{obj{"bearer": []any{}}, obj{"oauth2": []any{}}, obj{"oauth2Code": []any{}}},
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

func operationID(r route) string {
	var b strings.Builder
	b.WriteString(r.method)
	for _, seg := range strings.Split(r.path, "/") {
		seg = strings.Trim(seg, "{}")
		if seg == "" {
			continue
		}
		b.WriteString(strings.ToUpper(seg[:1]) + seg[1:])
	}
	return b.String()
}
