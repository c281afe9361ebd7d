package sunspecserver

import (
	"fmt"
	"io"
	"strings"

	"plantd/sunspec"
)

// WriteRegisterMap writes the server's register map as a Markdown table,
// from the same layout and model tables the server serves (a plant with a
// grid meter and a battery): every point's address (the PDU address, and
// the 1-based reference that tools such as mbpoll take), model, name,
// type, units, scale factor and what the server does with it: filled from
// the plant, static, writable, or not implemented.
func WriteRegisterMap(w io.Writer) error {
	img, err := buildImage(layout(true, true), identity{model: "plantd aggregate", unit: 1})
	if err != nil {
		return err
	}
	// Every figure present, so that each point the server can fill shows
	// as filled.
	one := some(1)
	all := totals{pvW: one, va: one, vvar: one, whLifetime: one, hz: one, producing: true, gridW: one, gridImpWh: one,
		gridExpWh: one, meterHz: one, socPct: one, chargeW: one, dischargeW: some(0), batteryRatedW: one, batteryVoltageV: one}
	for p := range 3 {
		all.aPh[p], all.vPh[p], all.meterAPh[p], all.meterVPh[p] = one, one, one, one
	}
	if err := img.fill(all); err != nil {
		return err
	}
	measured := map[uint16]bool{modelInverter: true, modelMeter: true, modelStorage: true}
	var b strings.Builder
	b.WriteString("| address | ref | model | point | type | units | SF | plantd |\n|---|---|---|---|---|---|---|---|\n")
	fmt.Fprintf(&b, "| %d | %d | | SunS | uint32 | | | static: 0x53756e53 |\n", Base, Base+1)
	for _, s := range img.models {
		inst := s.inst
		for i := range inst.Model.Group.Points {
			p := &inst.Model.Group.Points[i]
			addr := int(inst.Addr) + int(p.Offset)
			sf := ""
			if p.SF != sunspec.NoScale {
				sf = inst.Model.Group.Points[p.SF].Name
			}
			use := "not implemented"
			switch v := inst.ValueAt(&inst.Root, i); {
			case img.writable[addr-Base]:
				use = "**writable**"
			case inst.Model.ID == modelHolder && p.Name != "ID" && p.Name != "L":
				use = "the limit's holder"
			case !v.OK:
			case p.Name == "ID" || p.Name == "L" || strings.HasPrefix(p.Name, "Evt"):
				use = "static"
			case measured[inst.Model.ID] && p.Type == sunspec.TypeSunssf:
				use = "from the plant (the smallest that fits)"
			case measured[inst.Model.ID]:
				use = "from the plant"
			case strings.HasSuffix(p.Name, "RvrtRem"):
				use = "the limit's seconds left"
			case strings.HasSuffix(p.Name, "RvrtTms"):
				use = "the reading master's own"
			default:
				use = "static"
			}
			fmt.Fprintf(&b, "| %d | %d | %d | %s | %s | %s | %s | %s |\n", addr, addr+1, inst.Model.ID, p.Name, p.Type, p.Units, sf, use)
		}
	}
	end := Base + len(img.regs) - 2
	fmt.Fprintf(&b, "| %d | %d | | end | uint16, uint16 | | | static: 0xFFFF, 0 |\n", end, end+1)
	_, err = io.WriteString(w, b.String())
	return err
}
