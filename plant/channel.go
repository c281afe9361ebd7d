package plant

import "strconv"

// Channel is one measured quantity of a device under its API name
// (activePower, gridFeedIn, batteryStateOfCharge, ...). The zero Channel is
// no channel.
type Channel uint8

// The channels, in the order the API lists them. Units are in the table
// channelDefs; signs are documented in doc.go.
const (
	// PowerAc
	ActivePower Channel = iota + 1
	ActivePowerPhaseA
	ActivePowerPhaseB
	ActivePowerPhaseC
	ReactivePower
	ReactivePowerPhaseA
	ReactivePowerPhaseB
	ReactivePowerPhaseC
	ApparentPower
	ApparentPowerPhaseA
	ApparentPowerPhaseB
	ApparentPowerPhaseC
	VoltagePhaseA
	VoltagePhaseB
	VoltagePhaseC
	VoltagePhaseA2B
	VoltagePhaseB2C
	VoltagePhaseC2A
	CurrentPhaseA
	CurrentPhaseB
	CurrentPhaseC
	GridFrequency
	DisplacementPowerFactor
	// PowerDc and EnergyDc
	DCPowerInput
	DCVoltageInput
	DCCurrentInput
	IsolationResistance
	DCEnergyInput
	// EnergyAndPowerPv
	PVGeneration
	PVGenerationTotal
	// EnergyAndPowerInOut
	GridFeedIn
	GridConsumption
	GridFeedInTotal
	GridConsumptionTotal
	// EnergyAndPowerBattery
	BatteryCharging
	BatteryDischarging
	BatteryStateOfCharge
	BatteryStateOfHealth
	BatteryVoltage
	BatteryCurrent
	BatteryTemperature
	// Sensor
	ExternalInsolation
	AmbientTemperature
	ModuleTemperature
	WindSpeed
	// EnergyAndPowerConsumption (consumers of the home energy manager;
	// appended: the store keeps channels by number)
	Consumption
	ConsumptionTotal

	numChannels // one past the last channel
)

// NumChannels is one past the last channel: an array indexed by Channel
// (the device layer's per-device scratch) has this length.
const NumChannels = numChannels

// Unit is the unit of a channel's values.
type Unit string

// The units of channel values. UnitRatio is a plain number (a power factor
// −1..1).
const (
	UnitW       Unit = "W"
	UnitWh      Unit = "Wh"
	UnitVA      Unit = "VA"
	UnitVar     Unit = "var"
	UnitV       Unit = "V"
	UnitA       Unit = "A"
	UnitHz      Unit = "Hz"
	UnitOhm     Unit = "Ω"
	UnitPercent Unit = "%"
	UnitRatio   Unit = ""
	UnitCelsius Unit = "°C"
	UnitWm2     Unit = "W/m²"
	UnitMS      Unit = "m/s"
)

// SetType is a measurement set of the API (DESIGN §4).
type SetType string

// The measurement set types. EnergyBalance is plant-scoped; the others are
// device sets.
const (
	SetEnergyAndPowerPv          SetType = "EnergyAndPowerPv"
	SetEnergyAndPowerInOut       SetType = "EnergyAndPowerInOut"
	SetEnergyAndPowerConsumption SetType = "EnergyAndPowerConsumption"
	SetEnergyAndPowerBattery     SetType = "EnergyAndPowerBattery"
	SetPowerAc                   SetType = "PowerAc"
	SetPowerDc                   SetType = "PowerDc"
	SetEnergyDc                  SetType = "EnergyDc"
	SetEnergyMix                 SetType = "EnergyMix"
	SetSensor                    SetType = "Sensor"
	SetEnergyBalance             SetType = "EnergyBalance"
)

// channelDef describes a channel.
type channelDef struct {
	Name string // unique key: the API field name, plus "Total" for counters
	// Field is the measurement-set field the channel feeds; a lifetime
	// counter feeds the same field as its power channel (as Wh per
	// interval).
	Field string
	Unit  Unit
	Set   SetType
	// Indexed channels are lists [{"index","value"}] in the API: one value
	// per DC input (or battery), Index 1.. in a Reading.
	Indexed bool
	// Counter channels are lifetime accumulators (Wh): a period's energy is
	// the difference of two readings.
	Counter bool
}

// channelDefs is indexed by Channel.
var channelDefs = [numChannels]channelDef{
	ActivePower:             {Name: "activePower", Unit: UnitW, Set: SetPowerAc},
	ActivePowerPhaseA:       {Name: "activePowerPhaseA", Unit: UnitW, Set: SetPowerAc},
	ActivePowerPhaseB:       {Name: "activePowerPhaseB", Unit: UnitW, Set: SetPowerAc},
	ActivePowerPhaseC:       {Name: "activePowerPhaseC", Unit: UnitW, Set: SetPowerAc},
	ReactivePower:           {Name: "reactivePower", Unit: UnitVar, Set: SetPowerAc},
	ReactivePowerPhaseA:     {Name: "reactivePowerPhaseA", Unit: UnitVar, Set: SetPowerAc},
	ReactivePowerPhaseB:     {Name: "reactivePowerPhaseB", Unit: UnitVar, Set: SetPowerAc},
	ReactivePowerPhaseC:     {Name: "reactivePowerPhaseC", Unit: UnitVar, Set: SetPowerAc},
	ApparentPower:           {Name: "apparentPower", Unit: UnitVA, Set: SetPowerAc},
	ApparentPowerPhaseA:     {Name: "apparentPowerPhaseA", Unit: UnitVA, Set: SetPowerAc},
	ApparentPowerPhaseB:     {Name: "apparentPowerPhaseB", Unit: UnitVA, Set: SetPowerAc},
	ApparentPowerPhaseC:     {Name: "apparentPowerPhaseC", Unit: UnitVA, Set: SetPowerAc},
	VoltagePhaseA:           {Name: "voltagePhaseA", Unit: UnitV, Set: SetPowerAc},
	VoltagePhaseB:           {Name: "voltagePhaseB", Unit: UnitV, Set: SetPowerAc},
	VoltagePhaseC:           {Name: "voltagePhaseC", Unit: UnitV, Set: SetPowerAc},
	VoltagePhaseA2B:         {Name: "voltagePhaseA2B", Unit: UnitV, Set: SetPowerAc},
	VoltagePhaseB2C:         {Name: "voltagePhaseB2C", Unit: UnitV, Set: SetPowerAc},
	VoltagePhaseC2A:         {Name: "voltagePhaseC2A", Unit: UnitV, Set: SetPowerAc},
	CurrentPhaseA:           {Name: "currentPhaseA", Unit: UnitA, Set: SetPowerAc},
	CurrentPhaseB:           {Name: "currentPhaseB", Unit: UnitA, Set: SetPowerAc},
	CurrentPhaseC:           {Name: "currentPhaseC", Unit: UnitA, Set: SetPowerAc},
	GridFrequency:           {Name: "gridFrequency", Unit: UnitHz, Set: SetPowerAc},
	DisplacementPowerFactor: {Name: "displacementPowerFactor", Unit: UnitRatio, Set: SetPowerAc},
	DCPowerInput:            {Name: "dcPowerInput", Unit: UnitW, Set: SetPowerDc, Indexed: true},
	DCVoltageInput:          {Name: "dcVoltageInput", Unit: UnitV, Set: SetPowerDc, Indexed: true},
	DCCurrentInput:          {Name: "dcCurrentInput", Unit: UnitA, Set: SetPowerDc, Indexed: true},
	IsolationResistance:     {Name: "isolationResistance", Unit: UnitOhm, Set: SetPowerDc},
	DCEnergyInput:           {Name: "dcEnergyInput", Unit: UnitWh, Set: SetEnergyDc, Indexed: true, Counter: true},
	PVGeneration:            {Name: "pvGeneration", Unit: UnitW, Set: SetEnergyAndPowerPv},
	PVGenerationTotal:       {Name: "pvGenerationTotal", Field: "pvGeneration", Unit: UnitWh, Set: SetEnergyAndPowerPv, Counter: true},
	GridFeedIn:              {Name: "gridFeedIn", Unit: UnitW, Set: SetEnergyAndPowerInOut},
	GridConsumption:         {Name: "gridConsumption", Unit: UnitW, Set: SetEnergyAndPowerInOut},
	GridFeedInTotal:         {Name: "gridFeedInTotal", Field: "gridFeedIn", Unit: UnitWh, Set: SetEnergyAndPowerInOut, Counter: true},
	GridConsumptionTotal:    {Name: "gridConsumptionTotal", Field: "gridConsumption", Unit: UnitWh, Set: SetEnergyAndPowerInOut, Counter: true},
	BatteryCharging:         {Name: "batteryCharging", Unit: UnitW, Set: SetEnergyAndPowerBattery},
	BatteryDischarging:      {Name: "batteryDischarging", Unit: UnitW, Set: SetEnergyAndPowerBattery},
	BatteryStateOfCharge:    {Name: "batteryStateOfCharge", Unit: UnitPercent, Set: SetEnergyAndPowerBattery},
	BatteryStateOfHealth:    {Name: "batteryStateOfHealth", Unit: UnitPercent, Set: SetEnergyAndPowerBattery},
	BatteryVoltage:          {Name: "batteryVoltage", Unit: UnitV, Set: SetEnergyAndPowerBattery, Indexed: true},
	BatteryCurrent:          {Name: "batteryCurrent", Unit: UnitA, Set: SetEnergyAndPowerBattery, Indexed: true},
	BatteryTemperature:      {Name: "batteryTemperature", Unit: UnitCelsius, Set: SetEnergyAndPowerBattery, Indexed: true},
	ExternalInsolation:      {Name: "externalInsolation", Unit: UnitWm2, Set: SetSensor},
	AmbientTemperature:      {Name: "ambientTemperature", Unit: UnitCelsius, Set: SetSensor},
	ModuleTemperature:       {Name: "moduleTemperature", Unit: UnitCelsius, Set: SetSensor},
	WindSpeed:               {Name: "windSpeed", Unit: UnitMS, Set: SetSensor},
	Consumption:             {Name: "consumption", Unit: UnitW, Set: SetEnergyAndPowerConsumption},
	ConsumptionTotal:        {Name: "consumptionTotal", Field: "consumption", Unit: UnitWh, Set: SetEnergyAndPowerConsumption, Counter: true},
}

func (c Channel) def() *channelDef {
	if c == 0 || c >= numChannels {
		return &channelDef{}
	}
	return &channelDefs[c]
}

// Valid reports whether c is a known channel.
func (c Channel) Valid() bool { return c > 0 && c < numChannels }

// Name returns the channel's unique name: its API field name, or for a
// lifetime counter the field name plus "Total" ("pvGenerationTotal").
func (c Channel) Name() string { return c.def().Name }

// String returns Name, or "Channel(n)" for an invalid channel.
func (c Channel) String() string {
	if !c.Valid() {
		return "Channel(" + strconv.Itoa(int(c)) + ")"
	}
	return c.Name()
}

// Field returns the measurement-set field the channel feeds (a counter
// feeds the field of its power channel).
func (c Channel) Field() string {
	d := c.def()
	if d.Field != "" {
		return d.Field
	}
	return d.Name
}

// Unit returns the unit of the channel's values.
func (c Channel) Unit() Unit { return c.def().Unit }

// Set returns the measurement set the channel belongs to.
func (c Channel) Set() SetType { return c.def().Set }

// Indexed reports whether the API shows the channel as a list of
// {"index","value"} (per DC input or battery).
func (c Channel) Indexed() bool { return c.def().Indexed }

// Counter reports whether the channel is a lifetime energy counter (Wh).
func (c Channel) Counter() bool { return c.def().Counter }

// EnergyField reports whether c is a power field of an EnergyAndPower*
// set (pvGeneration, gridFeedIn, gridConsumption, batteryCharging,
// batteryDischarging, consumption): a period's value of it is an energy,
// from its lifetime counter (EnergyCounter) or its power integrated.
func (c Channel) EnergyField() bool {
	d := c.def()
	switch d.Set {
	case SetEnergyAndPowerPv, SetEnergyAndPowerInOut, SetEnergyAndPowerConsumption, SetEnergyAndPowerBattery:
		return d.Unit == UnitW && !d.Counter && !d.Indexed
	}
	return false
}

// EnergyCounter returns the lifetime counter of an energy field (the
// counter channel feeding the same field), or 0 when it has none.
func (c Channel) EnergyCounter() Channel {
	if !c.EnergyField() {
		return 0
	}
	for k := Channel(1); k < numChannels; k++ {
		if channelDefs[k].Counter && channelDefs[k].Field == channelDefs[c].Name {
			return k
		}
	}
	return 0
}

// Channels returns every channel in API order.
func Channels() []Channel {
	out := make([]Channel, 0, numChannels-1)
	for c := Channel(1); c < numChannels; c++ {
		out = append(out, c)
	}
	return out
}

// ChannelByName returns the channel of a name as returned by Name.
func ChannelByName(name string) (Channel, bool) {
	for c := Channel(1); c < numChannels; c++ {
		if channelDefs[c].Name == name {
			return c, true
		}
	}
	return 0, false
}

// IndexLabel is the API's "index" of input i (1-based) of an indexed
// channel: "A", "B", ... "Z", then "27", "28", ...
func IndexLabel(i int) string {
	if i >= 1 && i <= 26 {
		return string(rune('A' + i - 1))
	}
	return strconv.Itoa(i)
}
