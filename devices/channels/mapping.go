package channels

import (
	"fmt"
	"math"

	"plantd/plant"
	"plantd/plant/kind"
	"plantd/sunspec"
)

// This file holds the one hand-written SunSpec-to-API mapping: which point
// of which model feeds which channel, with its sign. Everything else about
// SunSpec (layouts, scale factors, not-implemented values) is generated in
// package sunspec. TestChannelTable checks every row against the model
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
	Channel plant.Channel
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
		{"W", plant.ActivePower, asIs},
		{"VAr", plant.ReactivePower, asIs},
		{"VA", plant.ApparentPower, asIs},
		{"PhVphA", plant.VoltagePhaseA, asIs},
		{"PhVphB", plant.VoltagePhaseB, asIs},
		{"PhVphC", plant.VoltagePhaseC, asIs},
		{"PPVphAB", plant.VoltagePhaseA2B, asIs},
		{"PPVphBC", plant.VoltagePhaseB2C, asIs},
		{"PPVphCA", plant.VoltagePhaseC2A, asIs},
		{"AphA", plant.CurrentPhaseA, asIs},
		{"AphB", plant.CurrentPhaseB, asIs},
		{"AphC", plant.CurrentPhaseC, asIs},
		{"Hz", plant.GridFrequency, asIs},
		{"PF", plant.DisplacementPowerFactor, powerFactor},
	}},
	{Kind: kind.Inverter, Models: classicInverterModels, Points: []pointRule{
		{"W", plant.PVGeneration, positive},
		{"WH", plant.PVGenerationTotal, asIs},
	}},
	// DER inverter AC side, 701. W > 0: generation (injection), < 0:
	// absorption.
	{Models: []uint16{701}, Points: []pointRule{
		{"W", plant.ActivePower, asIs},
		{"WL1", plant.ActivePowerPhaseA, asIs},
		{"WL2", plant.ActivePowerPhaseB, asIs},
		{"WL3", plant.ActivePowerPhaseC, asIs},
		{"Var", plant.ReactivePower, asIs},
		{"VarL1", plant.ReactivePowerPhaseA, asIs},
		{"VarL2", plant.ReactivePowerPhaseB, asIs},
		{"VarL3", plant.ReactivePowerPhaseC, asIs},
		{"VA", plant.ApparentPower, asIs},
		{"VAL1", plant.ApparentPowerPhaseA, asIs},
		{"VAL2", plant.ApparentPowerPhaseB, asIs},
		{"VAL3", plant.ApparentPowerPhaseC, asIs},
		{"VL1", plant.VoltagePhaseA, asIs},
		{"VL2", plant.VoltagePhaseB, asIs},
		{"VL3", plant.VoltagePhaseC, asIs},
		{"VL1L2", plant.VoltagePhaseA2B, asIs},
		{"VL2L3", plant.VoltagePhaseB2C, asIs},
		{"VL3L1", plant.VoltagePhaseC2A, asIs},
		{"AL1", plant.CurrentPhaseA, asIs},
		{"AL2", plant.CurrentPhaseB, asIs},
		{"AL3", plant.CurrentPhaseC, asIs},
		{"Hz", plant.GridFrequency, asIs},
		{"PF", plant.DisplacementPowerFactor, powerFactor},
	}},
	{Kind: kind.Inverter, Models: []uint16{701}, Points: []pointRule{
		{"W", plant.PVGeneration, positive},
		{"TotWhInj", plant.PVGenerationTotal, asIs},
	}},
	// Extended measurements, 122: the classic inverter's isolation
	// resistance and a 64-bit AC energy counter (used when WH is absent).
	{Models: []uint16{122}, Points: []pointRule{
		{"Ris", plant.IsolationResistance, asIs},
	}},
	{Kind: kind.Inverter, Models: []uint16{122}, Points: []pointRule{
		{"ActWh", plant.PVGenerationTotal, asIs},
	}},
	// DC inputs: per MPPT (160 modules, 714 ports) before the device
	// totals, so a device with inputs lists them and one without lists
	// its total as input A.
	{Models: []uint16{160}, Group: "module", Points: []pointRule{
		{"DCW", plant.DCPowerInput, asIs},
		{"DCV", plant.DCVoltageInput, asIs},
		{"DCA", plant.DCCurrentInput, asIs},
		{"DCWH", plant.DCEnergyInput, asIs},
	}},
	{Models: []uint16{714}, Group: "Prt", Points: []pointRule{
		{"DCW", plant.DCPowerInput, asIs},
		{"DCV", plant.DCVoltageInput, asIs},
		{"DCA", plant.DCCurrentInput, asIs},
		{"DCWhInj", plant.DCEnergyInput, asIs},
	}},
	{Models: []uint16{714}, Points: []pointRule{
		{"DCW", plant.DCPowerInput, asIs},
		{"DCA", plant.DCCurrentInput, asIs},
		{"DCWhInj", plant.DCEnergyInput, asIs},
	}},
	{Models: classicInverterModels, Points: []pointRule{
		{"DCW", plant.DCPowerInput, asIs},
		{"DCV", plant.DCVoltageInput, asIs},
		{"DCA", plant.DCCurrentInput, asIs},
	}},
	// Meters 201..204 and 211..214. W > 0: import from the grid (SunSpec).
	{Models: append(append([]uint16(nil), meterModelsPPV...), meterModelsPhV...), Points: []pointRule{
		{"W", plant.ActivePower, asIs},
		{"WphA", plant.ActivePowerPhaseA, asIs},
		{"WphB", plant.ActivePowerPhaseB, asIs},
		{"WphC", plant.ActivePowerPhaseC, asIs},
		{"VAR", plant.ReactivePower, asIs},
		{"VARphA", plant.ReactivePowerPhaseA, asIs},
		{"VARphB", plant.ReactivePowerPhaseB, asIs},
		{"VARphC", plant.ReactivePowerPhaseC, asIs},
		{"VA", plant.ApparentPower, asIs},
		{"VAphA", plant.ApparentPowerPhaseA, asIs},
		{"VAphB", plant.ApparentPowerPhaseB, asIs},
		{"VAphC", plant.ApparentPowerPhaseC, asIs},
		{"PhVphA", plant.VoltagePhaseA, asIs},
		{"PhVphB", plant.VoltagePhaseB, asIs},
		{"PhVphC", plant.VoltagePhaseC, asIs},
		{"AphA", plant.CurrentPhaseA, asIs},
		{"AphB", plant.CurrentPhaseB, asIs},
		{"AphC", plant.CurrentPhaseC, asIs},
		{"Hz", plant.GridFrequency, asIs},
		{"PF", plant.DisplacementPowerFactor, powerFactor},
	}},
	{Models: meterModelsPPV, Points: []pointRule{
		{"PPVphAB", plant.VoltagePhaseA2B, asIs},
		{"PPVphBC", plant.VoltagePhaseB2C, asIs},
		{"PPVphCA", plant.VoltagePhaseC2A, asIs},
	}},
	{Models: meterModelsPhV, Points: []pointRule{
		{"PhVphAB", plant.VoltagePhaseA2B, asIs},
		{"PhVphBC", plant.VoltagePhaseB2C, asIs},
		{"PhVphCA", plant.VoltagePhaseC2A, asIs},
	}},
	{Kind: kind.Meter, Models: append(append([]uint16(nil), meterModelsPPV...), meterModelsPhV...), Points: []pointRule{
		{"W", plant.GridConsumption, positive},
		{"W", plant.GridFeedIn, negated},
		{"TotWhImp", plant.GridConsumptionTotal, asIs},
		{"TotWhExp", plant.GridFeedInTotal, asIs},
	}},
	// Battery, 802 first (W > 0: discharging, < 0: charging), then the
	// DER storage capacity 713 and the classic storage controls 124.
	{Kind: kind.Battery, Models: []uint16{802}, Points: []pointRule{
		{"W", plant.ActivePower, asIs},
	}},
	{Models: []uint16{802}, Points: []pointRule{
		{"W", plant.BatteryDischarging, positive},
		{"W", plant.BatteryCharging, negated},
		{"SoC", plant.BatteryStateOfCharge, asIs},
		{"SoH", plant.BatteryStateOfHealth, asIs},
		{"V", plant.BatteryVoltage, asIs},
		{"A", plant.BatteryCurrent, asIs},
	}},
	{Models: []uint16{713}, Points: []pointRule{
		{"SoC", plant.BatteryStateOfCharge, asIs},
		{"SoH", plant.BatteryStateOfHealth, asIs},
	}},
	{Models: []uint16{124}, Points: []pointRule{
		{"ChaState", plant.BatteryStateOfCharge, asIs},
		{"InBatV", plant.BatteryVoltage, asIs},
	}},
	// Weather: plane-of-array irradiance before global horizontal.
	{Models: []uint16{302}, Group: "repeating", Points: []pointRule{
		{"POAI", plant.ExternalInsolation, asIs},
		{"GHI", plant.ExternalInsolation, asIs},
	}},
	{Models: []uint16{308}, Points: []pointRule{
		{"GHI", plant.ExternalInsolation, asIs},
		{"TmpAmb", plant.AmbientTemperature, asIs},
		{"TmpBOM", plant.ModuleTemperature, asIs},
		{"WndSpd", plant.WindSpeed, asIs},
	}},
	{Models: []uint16{307}, Points: []pointRule{
		{"TmpAmb", plant.AmbientTemperature, asIs},
		{"WndSpd", plant.WindSpeed, asIs},
	}},
	{Models: []uint16{303}, Group: "temp", Points: []pointRule{
		{"TmpBOM", plant.ModuleTemperature, asIs},
	}},
}

// compiledRule is one row of channelTable for one model, with the point
// located in the model definition.
type compiledRule struct {
	id      uint16 // 1-based position in the compiled table: the priority
	point   int    // index of the point in its group
	channel plant.Channel
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

// step is one row of a table (a block of the channel table, a state or an
// event rule) whose model a device's poll has: the row's index and the
// position of its model in the poll's models.
type step struct {
	row, model int
}

// route is where the tables' rows find their models in a device's polls,
// made once for a sequence of model ids and a kind (a device's read plan
// reads the same models every poll), so that a poll visits only the rows
// its models have, without searching for them.
type route struct {
	ids            []uint16
	kind           kind.Kind
	blocks         []step
	states, events []step
}

// matches reports whether r was made for these models and kind.
func (r *route) matches(k kind.Kind, models []*sunspec.Instance) bool {
	if r.ids == nil || r.kind != k || len(r.ids) != len(models) {
		return false
	}
	for i, m := range models {
		if m == nil || m.Model == nil || m.Model.ID != r.ids[i] {
			return false
		}
	}
	return true
}

// newRoute makes the route of models of a device of kind k through the
// channel table m and the status tables st.
func newRoute(m *mapping, st *status, k kind.Kind, models []*sunspec.Instance) *route {
	r := &route{ids: make([]uint16, 0, len(models)), kind: k}
	pos := func(id uint16) int {
		for i, inst := range models {
			if inst != nil && inst.Model != nil && inst.Model.ID == id {
				return i // the first instance of the model
			}
		}
		return -1
	}
	for _, inst := range models {
		id := uint16(0)
		if inst != nil && inst.Model != nil {
			id = inst.Model.ID
		}
		r.ids = append(r.ids, id)
	}
	for i := range m.blocks {
		b := &m.blocks[i]
		if b.kind != "" && b.kind != k {
			continue
		}
		if p := pos(b.model); p >= 0 {
			r.blocks = append(r.blocks, step{i, p})
		}
	}
	for i := range st.states {
		if p := pos(st.states[i].model); p >= 0 {
			r.states = append(r.states, step{i, p})
		}
	}
	for i := range st.events {
		if p := pos(st.events[i].model); p >= 0 {
			r.events = append(r.events, step{i, p})
		}
	}
	return r
}

// extractor maps one device's models to readings; it keeps the scratch
// of the last extraction so that a poll allocates nothing once its
// readings buffer has grown to the device's size.
type extractor struct {
	// setBy is the id of the rule that set a channel (0 = absent).
	setBy [plant.NumChannels]uint16
}

// extract appends to dst[:0] the readings of the models of one poll of a
// device (whose route r is) and returns it: each plain channel once, from the
// first row of the table that gives it; the inputs of an indexed channel
// in row order.
func (m *mapping) extract(e *extractor, models []*sunspec.Instance, r *route, dst []plant.Reading) []plant.Reading {
	e.setBy = [plant.NumChannels]uint16{}
	dst = dst[:0]
	for _, st := range r.blocks {
		b := &m.blocks[st.row]
		inst := models[st.model]
		var occ []sunspec.GroupInstance
		if b.group >= 0 {
			if b.group >= len(inst.Root.Sub) {
				continue
			}
			occ = inst.Root.Sub[b.group]
		}
		for ri := range b.rules {
			rule := &b.rules[ri]
			if s := e.setBy[rule.channel]; s != 0 && s != rule.id {
				continue // a row of higher priority gave the channel
			}
			if b.group < 0 {
				dst, _ = e.put(dst, rule, 1, inst.ValueAt(&inst.Root, rule.point))
				continue
			}
			for j := range occ {
				var ok bool
				if dst, ok = e.put(dst, rule, j+1, inst.ValueAt(&occ[j], rule.point)); ok && !rule.channel.Indexed() {
					break // a plain channel takes the first occurrence
				}
			}
		}
	}
	return dst
}

// put appends a decoded value for rule r as input index of an indexed
// channel (or as the plain channel's value) and reports whether it was
// implemented.
func (e *extractor) put(dst []plant.Reading, r *compiledRule, index int, val sunspec.Value) ([]plant.Reading, bool) {
	if !val.OK || math.IsNaN(val.Float) || math.IsInf(val.Float, 0) {
		return dst, false
	}
	f := r.conv.apply(val.Float)
	e.setBy[r.channel] = r.id
	if !r.channel.Indexed() {
		index = 0
	}
	return append(dst, plant.Reading{Channel: r.channel, Index: index, Value: f}), true
}
