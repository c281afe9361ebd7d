package sunspecserver

import (
	"errors"
	"net/netip"
	"time"

	"plantd/config"
	"plantd/gridcontrol"
	"plantd/sunspec"
)

// The holder model: who holds the limit in force. SunSpec's models have
// no point for it (a control model says what the limit is, not whose it
// is) and model 1's strings are static and too short for an origin, so
// the map ends with a model of plantd's own, in the vendor range
// (64000..65535) that SunSpec sets aside for vendor models, after 704:
// a client that walks the model chain and knows no model 64900 steps over
// it by its length, as the chain is made for.
//
//	Role   enum16      0 no limit in force, 1 installer, 2 grid operator
//	Own    enum16      1 when the limit in force is the reading master's
//	                   own window, else 0 (each master reads its own)
//	Cmd    enum16      0 none, 1 opModMaxLimW, 2 FeedInLimit (the
//	                   FeedInLimit loop's output limit governs)
//	Sched  string[16]  the governing schedule's id (as the HTTP API
//	                   lists it)
//	By     string[64]  its createdBy: "modbus:192.168.10.20 (installer)",
//	                   "dso (gridoperator)", "input:rcr/K3 (gridoperator)"

// modelHolder is the holder model's id.
const modelHolder = 64900

// holderModel is the holder model's definition, laid out as the
// generated SunSpec tables are.
var holderModel = sunspec.Model{ID: modelHolder, Name: "plantd_limit_holder", Label: "plantd: holder of the limit in force",
	Group: sunspec.Group{Name: "plantd_limit_holder", FixedLen: 45, Points: []sunspec.Point{
		{Name: "ID", Label: "Model ID", Type: sunspec.TypeUint16, Size: 1, Offset: 0, SF: sunspec.NoScale, Mandatory: true, Static: true, Fixed: modelHolder},
		{Name: "L", Label: "Model Length", Type: sunspec.TypeUint16, Size: 1, Offset: 1, SF: sunspec.NoScale, Mandatory: true, Static: true, Fixed: -1},
		{Name: "Role", Label: "Role of the holder", Type: sunspec.TypeEnum16, Size: 1, Offset: 2, SF: sunspec.NoScale, Fixed: -1,
			Symbols: []sunspec.Symbol{{Name: "NONE", Value: 0}, {Name: "INSTALLER", Value: 1}, {Name: "GRIDOPERATOR", Value: 2}}},
		{Name: "Own", Label: "The reading master holds it", Type: sunspec.TypeEnum16, Size: 1, Offset: 3, SF: sunspec.NoScale, Fixed: -1,
			Symbols: []sunspec.Symbol{{Name: "NO", Value: 0}, {Name: "YES", Value: 1}}},
		{Name: "Cmd", Label: "Governing command", Type: sunspec.TypeEnum16, Size: 1, Offset: 4, SF: sunspec.NoScale, Fixed: -1,
			Symbols: []sunspec.Symbol{{Name: "NONE", Value: 0}, {Name: "OPMODMAXLIMW", Value: 1}, {Name: "FEEDINLIMIT", Value: 2}}},
		{Name: "Sched", Label: "Governing schedule id", Type: sunspec.TypeString, Size: 8, Offset: 5, SF: sunspec.NoScale, Fixed: -1},
		{Name: "By", Label: "Holder (createdBy)", Type: sunspec.TypeString, Size: 32, Offset: 13, SF: sunspec.NoScale, Fixed: -1},
	}}}

// HolderModel returns the definition of the holder model (id 64900) for
// clients that decode it (plantd's tests, a SCADA integration).
func HolderModel() *sunspec.Model { return &holderModel }

// modelDef returns the definition of a model of the map.
func modelDef(id uint16) *sunspec.Model {
	if id == modelHolder {
		return &holderModel
	}
	return sunspec.ModelByID(id)
}

// storeHolder writes who holds the limit in force into the holder model;
// Own is 0 here (overlay sets it for the reading master).
func (f inForce) storeHolder(img *image) error {
	h := img.model(modelHolder)
	if h == nil {
		return nil
	}
	role, cmd := 0.0, 0.0
	sched, by := "", ""
	if f.ok {
		switch f.lim.Role {
		case config.RoleInstaller:
			role = 1
		case config.RoleGridOperator:
			role = 2
		}
		switch f.lim.Command {
		case gridcontrol.CmdMaxLimW:
			cmd = 1
		case gridcontrol.CmdFeedInLimit:
			cmd = 2
		}
		sched, by = clip(f.lim.ScheduleID, 16), clip(f.lim.CreatedBy, 64)
	}
	return errors.Join(h.Set("Role", role), h.Set("Own", 0), h.Set("Cmd", cmd), h.SetString("Sched", sched), h.SetString("By", by))
}

// ownRegs are the registers whose reads depend on the reading master:
// the RvrtTms points (as it wrote them) and the holder's Own.
type ownRegs struct {
	rvrt123, rvrt704, own int // indexes into image.regs; -1 none
}

// ownRegsOf locates the reading master's registers in the map.
func ownRegsOf(img *image) ownRegs {
	at := func(model uint16, point string) int {
		for _, s := range img.models {
			if s.inst.Model.ID == model {
				return s.off + int(s.inst.Model.Group.Points[s.inst.Model.Group.PointIndex(point)].Offset)
			}
		}
		return -1
	}
	return ownRegs{rvrt123: at(modelControls, "WMaxLimPct_RvrtTms"), rvrt704: at(modelDERCtl, "WMaxLimPctRvrtTms"), own: at(modelHolder, "Own")}
}

// overlayLocked puts the reading master's own registers into out, the
// registers of the map from index off: its RvrtTms and whether the limit
// in force is its own window. s.mu is held.
func (s *Server) overlayLocked(out []uint16, off int, client netip.Addr) {
	var rvrt uint32
	own := false
	if c := s.masters[client]; c != nil {
		rvrt = c.rvrtS
		own = s.gov.ok && c.held != "" && c.held == s.gov.lim.ScheduleID
	}
	set := func(i int, v uint16) {
		if i >= off && i < off+len(out) {
			out[i-off] = v
		}
	}
	if i := s.own.rvrt123; i >= 0 {
		set(i, uint16(min(rvrt, 0xFFFE)))
	}
	if i := s.own.rvrt704; i >= 0 {
		set(i, uint16(rvrt>>16))
		set(i+1, uint16(rvrt))
	}
	if i := s.own.own; i >= 0 && own {
		set(i, 1)
	}
}

// fetchLocked reads the limit in force from grid control (none without
// grid control, as in tests of the reads alone). s.mu is held.
func (s *Server) fetchLocked() {
	if s.grid == nil {
		s.gov = inForce{}
		return
	}
	lim, ok, err := s.grid.GoverningLimit(s.cfg.PlantID)
	if err != nil {
		s.log.Warn("the limit in force", "err", err)
		return
	}
	s.gov = inForce{ok: ok, lim: lim}
}

// publishLocked fetches the limit in force and shows it. s.mu is held.
func (s *Server) publishLocked(now time.Time) {
	s.fetchLocked()
	if err := s.gov.publish(s.img, now); err != nil {
		s.log.Warn("SunSpec map controls", "err", err)
	}
}
