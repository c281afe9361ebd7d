package plant

import (
	"fmt"
	"math"

	"plantd/plant/kind"
	"plantd/sunspec"
)

// This file holds the one hand-written SunSpec-to-API mapping: which point
// of which model feeds which channel, with its sign. Everything else about
// SunSpec (layouts, scale factors, not-implemented values) is generated in
// package devices. TestChannelTable checks every row against the model
// definitions.

// conv turns a decoded point value (in the point's SunSpec units) into the
// channel's value.
type conv uint8

const (
	asIs        conv = iota // the value as it is
	positive                // max(0, v): the import / generation side of a signed power
	negated                 // max(0, −v): the export / absorption side of a signed power
	powerFactor             // a power factor as a ratio −1..1 (a percent value is divided by 100)
)

func (c conv) apply(v float64) float64 {
	switch c {
	case positive:
		return math.Max(0, v)
	case negated:
		return math.Max(0, -v)
	case powerFactor:
		// 1xx/20x give percent ("Pct"), 701 and 21x a ratio; some
		// devices send percent under either, so decide by magnitude.
		if math.Abs(v) > 1.0001 {
			v /= 100
		}
		if math.Abs(v) > 1.01 {
			return v // not rounding: the plausibility check drops it
		}
		return math.Max(-1, math.Min(1, v))
	}
	return v
}

// pointRule maps one point to one channel.
type pointRule struct {
	Point   string
	Channel Channel
	Conv    conv
}

// ruleSet maps points of one or more models with the same point names.
type ruleSet struct {
	// Kind restricts the rules to devices of that kind ("" = any kind).
	Kind   kind.Kind
	Models []uint16
	// Group names a repeating group of the model ("" = the model's top
	// group). For an indexed channel every occurrence is an input (index
	// 1, 2, ...); for a plain channel only the first occurrence counts.
	Group  string
	Points []pointRule
}

// Model families that share point names.
var (
	classicInverterModels = []uint16{101, 102, 103, 111, 112, 113}
	// 201 and the float meters name the line-to-line voltages PPVphXY;
	// 202, 203 and 204 name them PhVphXY.
	meterModelsPPV = []uint16{201, 211, 212, 213, 214}
	meterModelsPhV = []uint16{202, 203, 204}
)

// channelTable is the SunSpec-to-API channel table. Order is priority:
// when several rows feed a channel, the first row whose model the device
// has and whose point is implemented wins, whatever the models' order in
// the device's chain.
var channelTable = []ruleSet{
	// Inverter AC side, classic models 101..113. W > 0: the inverter
	// delivers power into the AC grid.
	{Models: classicInverterModels, Points: []pointRule{
		{"W", ActivePower, asIs},
		{"VAr", ReactivePower, asIs},
		{"VA", ApparentPower, asIs},
		{"PhVphA", VoltagePhaseA, asIs},
		{"PhVphB", VoltagePhaseB, asIs},
		{"PhVphC", VoltagePhaseC, asIs},
		{"PPVphAB", VoltagePhaseA2B, asIs},
		{"PPVphBC", VoltagePhaseB2C, asIs},
		{"PPVphCA", VoltagePhaseC2A, asIs},
		{"AphA", CurrentPhaseA, asIs},
		{"AphB", CurrentPhaseB, asIs},
		{"AphC", CurrentPhaseC, asIs},
		{"Hz", GridFrequency, asIs},
		{"PF", DisplacementPowerFactor, powerFactor},
	}},
	{Kind: kind.Inverter, Models: classicInverterModels, Points: []pointRule{
		{"W", PVGeneration, positive},
		{"WH", PVGenerationTotal, asIs},
	}},
	// DER inverter AC side, 701. W > 0: generation (injection), < 0:
	// absorption.
	{Models: []uint16{701}, Points: []pointRule{
		{"W", ActivePower, asIs},
		{"WL1", ActivePowerPhaseA, asIs},
		{"WL2", ActivePowerPhaseB, asIs},
		{"WL3", ActivePowerPhaseC, asIs},
		{"Var", ReactivePower, asIs},
		{"VarL1", ReactivePowerPhaseA, asIs},
		{"VarL2", ReactivePowerPhaseB, asIs},
		{"VarL3", ReactivePowerPhaseC, asIs},
		{"VA", ApparentPower, asIs},
		{"VAL1", ApparentPowerPhaseA, asIs},
		{"VAL2", ApparentPowerPhaseB, asIs},
		{"VAL3", ApparentPowerPhaseC, asIs},
		{"VL1", VoltagePhaseA, asIs},
		{"VL2", VoltagePhaseB, asIs},
		{"VL3", VoltagePhaseC, asIs},
		{"VL1L2", VoltagePhaseA2B, asIs},
		{"VL2L3", VoltagePhaseB2C, asIs},
		{"VL3L1", VoltagePhaseC2A, asIs},
		{"AL1", CurrentPhaseA, asIs},
		{"AL2", CurrentPhaseB, asIs},
		{"AL3", CurrentPhaseC, asIs},
		{"Hz", GridFrequency, asIs},
		{"PF", DisplacementPowerFactor, powerFactor},
	}},
	{Kind: kind.Inverter, Models: []uint16{701}, Points: []pointRule{
		{"W", PVGeneration, positive},
		{"TotWhInj", PVGenerationTotal, asIs},
	}},
	// Extended measurements, 122: the classic inverter's isolation
	// resistance and a 64-bit AC energy counter (used when WH is absent).
	{Models: []uint16{122}, Points: []pointRule{
		{"Ris", IsolationResistance, asIs},
	}},
	{Kind: kind.Inverter, Models: []uint16{122}, Points: []pointRule{
		{"ActWh", PVGenerationTotal, asIs},
	}},
	// DC inputs: per MPPT (160 modules, 714 ports) before the device
	// totals, so a device with inputs lists them and one without lists
	// its total as input A.
	{Models: []uint16{160}, Group: "module", Points: []pointRule{
		{"DCW", DCPowerInput, asIs},
		{"DCV", DCVoltageInput, asIs},
		{"DCA", DCCurrentInput, asIs},
		{"DCWH", DCEnergyInput, asIs},
	}},
	{Models: []uint16{714}, Group: "Prt", Points: []pointRule{
		{"DCW", DCPowerInput, asIs},
		{"DCV", DCVoltageInput, asIs},
		{"DCA", DCCurrentInput, asIs},
		{"DCWhInj", DCEnergyInput, asIs},
	}},
	{Models: []uint16{714}, Points: []pointRule{
		{"DCW", DCPowerInput, asIs},
		{"DCA", DCCurrentInput, asIs},
		{"DCWhInj", DCEnergyInput, asIs},
	}},
	{Models: classicInverterModels, Points: []pointRule{
		{"DCW", DCPowerInput, asIs},
		{"DCV", DCVoltageInput, asIs},
		{"DCA", DCCurrentInput, asIs},
	}},
	// Meters 201..204 and 211..214. W > 0: import from the grid (SunSpec).
	{Models: append(append([]uint16(nil), meterModelsPPV...), meterModelsPhV...), Points: []pointRule{
		{"W", ActivePower, asIs},
		{"WphA", ActivePowerPhaseA, asIs},
		{"WphB", ActivePowerPhaseB, asIs},
		{"WphC", ActivePowerPhaseC, asIs},
		{"VAR", ReactivePower, asIs},
		{"VARphA", ReactivePowerPhaseA, asIs},
		{"VARphB", ReactivePowerPhaseB, asIs},
		{"VARphC", ReactivePowerPhaseC, asIs},
		{"VA", ApparentPower, asIs},
		{"VAphA", ApparentPowerPhaseA, asIs},
		{"VAphB", ApparentPowerPhaseB, asIs},
		{"VAphC", ApparentPowerPhaseC, asIs},
		{"PhVphA", VoltagePhaseA, asIs},
		{"PhVphB", VoltagePhaseB, asIs},
		{"PhVphC", VoltagePhaseC, asIs},
		{"AphA", CurrentPhaseA, asIs},
		{"AphB", CurrentPhaseB, asIs},
		{"AphC", CurrentPhaseC, asIs},
		{"Hz", GridFrequency, asIs},
		{"PF", DisplacementPowerFactor, powerFactor},
	}},
	{Models: meterModelsPPV, Points: []pointRule{
		{"PPVphAB", VoltagePhaseA2B, asIs},
		{"PPVphBC", VoltagePhaseB2C, asIs},
		{"PPVphCA", VoltagePhaseC2A, asIs},
	}},
	{Models: meterModelsPhV, Points: []pointRule{
		{"PhVphAB", VoltagePhaseA2B, asIs},
		{"PhVphBC", VoltagePhaseB2C, asIs},
		{"PhVphCA", VoltagePhaseC2A, asIs},
	}},
	{Kind: kind.Meter, Models: append(append([]uint16(nil), meterModelsPPV...), meterModelsPhV...), Points: []pointRule{
		{"W", GridConsumption, positive},
		{"W", GridFeedIn, negated},
		{"TotWhImp", GridConsumptionTotal, asIs},
		{"TotWhExp", GridFeedInTotal, asIs},
	}},
	// Battery, 802 first (W > 0: discharging, < 0: charging), then the
	// DER storage capacity 713 and the classic storage controls 124.
	{Kind: kind.Battery, Models: []uint16{802}, Points: []pointRule{
		{"W", ActivePower, asIs},
	}},
	{Models: []uint16{802}, Points: []pointRule{
		{"W", BatteryDischarging, positive},
		{"W", BatteryCharging, negated},
		{"SoC", BatteryStateOfCharge, asIs},
		{"SoH", BatteryStateOfHealth, asIs},
		{"V", BatteryVoltage, asIs},
		{"A", BatteryCurrent, asIs},
	}},
	{Models: []uint16{713}, Points: []pointRule{
		{"SoC", BatteryStateOfCharge, asIs},
		{"SoH", BatteryStateOfHealth, asIs},
	}},
	{Models: []uint16{124}, Points: []pointRule{
		{"ChaState", BatteryStateOfCharge, asIs},
		{"InBatV", BatteryVoltage, asIs},
	}},
	// Weather: plane-of-array irradiance before global horizontal.
	{Models: []uint16{302}, Group: "repeating", Points: []pointRule{
		{"POAI", ExternalInsolation, asIs},
		{"GHI", ExternalInsolation, asIs},
	}},
	{Models: []uint16{308}, Points: []pointRule{
		{"GHI", ExternalInsolation, asIs},
		{"TmpAmb", AmbientTemperature, asIs},
		{"TmpBOM", ModuleTemperature, asIs},
		{"WndSpd", WindSpeed, asIs},
	}},
	{Models: []uint16{307}, Points: []pointRule{
		{"TmpAmb", AmbientTemperature, asIs},
		{"WndSpd", WindSpeed, asIs},
	}},
	{Models: []uint16{303}, Group: "temp", Points: []pointRule{
		{"TmpBOM", ModuleTemperature, asIs},
	}},
}

// compiledRule is one row of channelTable for one model, with the point
// located in the model definition.
type compiledRule struct {
	id      uint16 // 1-based position in the compiled table: the priority
	point   int    // index of the point in its group
	channel Channel
	conv    conv
}

// ruleBlock is the rows of one ruleSet for one model.
type ruleBlock struct {
	kind  kind.Kind
	model uint16
	group int // index into the top group's sub-groups, or -1
	rules []compiledRule
}

// mapping is the compiled channel table: blocks in priority order.
type mapping struct {
	blocks []ruleBlock
}

// compileTable locates every point of channelTable in the generated model
// definitions. An unknown model, group or point is an error (a typo in the
// table); TestChannelTable keeps it from happening.
func compileTable(table []ruleSet) (*mapping, error) {
	m := &mapping{}
	id := uint16(0)
	for _, rs := range table {
		for _, mid := range rs.Models {
			def := sunspec.ModelByID(mid)
			if def == nil {
				return nil, fmt.Errorf("channel table: unknown model %d", mid)
			}
			b := ruleBlock{kind: rs.Kind, model: mid, group: -1}
			g := &def.Group
			if rs.Group != "" {
				for i := range def.Group.Groups {
					if def.Group.Groups[i].Name == rs.Group {
						b.group = i
						g = &def.Group.Groups[i]
					}
				}
				if b.group < 0 {
					return nil, fmt.Errorf("channel table: model %d has no group %q", mid, rs.Group)
				}
			}
			for _, pr := range rs.Points {
				pi := g.PointIndex(pr.Point)
				if pi < 0 {
					return nil, fmt.Errorf("channel table: model %d group %s has no point %q", mid, g.Name, pr.Point)
				}
				if !pr.Channel.Valid() {
					return nil, fmt.Errorf("channel table: model %d point %s: invalid channel %d", mid, pr.Point, pr.Channel)
				}
				id++
				b.rules = append(b.rules, compiledRule{id: id, point: pi, channel: pr.Channel, conv: pr.Conv})
			}
			m.blocks = append(m.blocks, b)
		}
	}
	return m, nil
}

// Reading is one channel value of a device.
type Reading struct {
	Channel Channel
	// Index is 0 for a plain channel and the input number (1, 2, ...) for
	// an indexed one; IndexLabel gives the API's label.
	Index int
	Value float64
}

// values holds a device's channel values. extract refills it without
// allocating once its inputs slice has grown to the device's size.
type values struct {
	scalar [numChannels]float64
	// setBy is the id of the rule that set a channel (0 = absent).
	setBy  [numChannels]uint16
	inputs []Reading // indexed channels, in rule order
	// dropped is the last value of a channel the plausibility check
	// dropped, for the log (nil until one was: 368 bytes per device).
	dropped *[numChannels]float64
}

func (v *values) reset() {
	v.setBy = [numChannels]uint16{}
	v.inputs = v.inputs[:0]
}

// get returns a plain channel's value.
func (v *values) get(c Channel) (float64, bool) {
	if !c.Valid() || v.setBy[c] == 0 || c.Indexed() {
		return 0, false
	}
	return v.scalar[c], true
}

// has reports whether the channel has a value (any input for an indexed
// channel).
func (v *values) has(c Channel) bool { return c.Valid() && v.setBy[c] != 0 }

// modelSet is a set of the model ids below 1024 (every model a rule
// names); it lets extract skip the rules of models a sample lacks without
// searching it.
type modelSet [16]uint64

func newModelSet(models []*sunspec.Instance) modelSet {
	var s modelSet
	for _, m := range models {
		if m != nil && m.Model != nil && m.Model.ID < 1024 {
			s[m.Model.ID>>6] |= 1 << (m.Model.ID & 63)
		}
	}
	return s
}

func (s *modelSet) has(id uint16) bool { return id < 1024 && s[id>>6]&(1<<(id&63)) != 0 }

// findModel returns the first instance of model id.
func findModel(models []*sunspec.Instance, id uint16) *sunspec.Instance {
	for _, m := range models {
		if m != nil && m.Model != nil && m.Model.ID == id {
			return m
		}
	}
	return nil
}

// extract fills v from the models of one sample of a device of kind k.
func (m *mapping) extract(k kind.Kind, models []*sunspec.Instance, v *values) {
	v.reset()
	present := newModelSet(models)
	for bi := range m.blocks {
		b := &m.blocks[bi]
		if b.kind != "" && b.kind != k || !present.has(b.model) {
			continue
		}
		inst := findModel(models, b.model)
		if inst == nil {
			continue
		}
		var occ []sunspec.GroupInstance
		if b.group >= 0 {
			if b.group >= len(inst.Root.Sub) {
				continue
			}
			occ = inst.Root.Sub[b.group]
		}
		for ri := range b.rules {
			r := &b.rules[ri]
			if s := v.setBy[r.channel]; s != 0 && s != r.id {
				continue // a row of higher priority gave the channel
			}
			if b.group < 0 {
				v.put(r, 1, inst.ValueAt(&inst.Root, r.point))
				continue
			}
			for j := range occ {
				if v.put(r, j+1, inst.ValueAt(&occ[j], r.point)) && !r.channel.Indexed() {
					break // a plain channel takes the first occurrence
				}
			}
		}
	}
}

// put stores a decoded value for rule r as input index of an indexed
// channel (or as the plain channel's value) and reports whether it was
// implemented.
func (v *values) put(r *compiledRule, index int, val sunspec.Value) bool {
	if !val.OK || math.IsNaN(val.Float) || math.IsInf(val.Float, 0) {
		return false
	}
	f := r.conv.apply(val.Float)
	v.setBy[r.channel] = r.id
	if r.channel.Indexed() {
		v.inputs = append(v.inputs, Reading{Channel: r.channel, Index: index, Value: f})
	} else {
		v.scalar[r.channel] = f
	}
	return true
}

// consumerRule marks the channels a consumer's reading sets (no SunSpec
// rule has this id).
const consumerRule = math.MaxUint16

// putConsumer sets the channels of a consumer's reading.
func (v *values) putConsumer(r *ConsumerReading) {
	v.reset()
	if r.HasPower && !math.IsNaN(r.PowerW) && !math.IsInf(r.PowerW, 0) {
		v.scalar[Consumption], v.setBy[Consumption] = r.PowerW, consumerRule
	}
	if r.HasEnergy && !math.IsNaN(r.EnergyWh) && !math.IsInf(r.EnergyWh, 0) {
		v.scalar[ConsumptionTotal], v.setBy[ConsumptionTotal] = r.EnergyWh, consumerRule
	}
}

// SetsFor returns the measurement sets a device of kind k with nameplate n
// (nil: none known) can fill, in API order: for a SunSpec device the sets
// of every channel some row of the channel table maps from its models,
// for a template device (n.Template) the sets of the channels its
// template's points feed.
func SetsFor(k kind.Kind, n *Nameplate) []SetType {
	if k == kind.Consumer {
		return []SetType{SetEnergyAndPowerConsumption}
	}
	seen := map[SetType]bool{}
	var modelIDs []uint16
	if n != nil {
		modelIDs = n.Models
		if n.Template != "" {
			for _, c := range templateChannels(n.Template) {
				seen[c.Set()] = true
			}
		}
	}
	for _, rs := range channelTable {
		if rs.Kind != "" && rs.Kind != k {
			continue
		}
		for _, mid := range rs.Models {
			for _, id := range modelIDs {
				if id != mid {
					continue
				}
				for _, pr := range rs.Points {
					seen[pr.Channel.Set()] = true
				}
			}
		}
	}
	order := []SetType{SetEnergyAndPowerPv, SetEnergyAndPowerInOut, SetEnergyAndPowerConsumption,
		SetEnergyAndPowerBattery, SetPowerAc, SetPowerDc, SetEnergyDc, SetEnergyMix, SetSensor}
	var out []SetType
	for _, s := range order {
		if seen[s] {
			out = append(out, s)
		}
	}
	return out
}
