package sunspec

import (
	"encoding/binary"
	"testing"
)

// FuzzDecode feeds random register images to the decoder of every model:
// nothing may panic, and a value reported OK must come from registers the
// image holds.
func FuzzDecode(f *testing.F) {
	for _, seed := range [][]uint16{m103, m113, m122, m1} {
		b := make([]byte, 2*len(seed))
		for i, r := range seed {
			binary.BigEndian.PutUint16(b[2*i:], r)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		regs := make([]uint16, len(data)/2)
		for i := range regs {
			regs[i] = binary.BigEndian.Uint16(data[2*i:])
		}
		models := Models()
		if len(regs) > 0 {
			// Decode as the model the image claims, and as one picked by the data.
			if m := ModelByID(regs[0]); m != nil {
				decodeAll(t, m, regs)
			}
			m := models[int(regs[0])%len(models)]
			img := append([]uint16{m.ID}, regs[1:]...)
			decodeAll(t, m, img)
		}
	})
}

func decodeAll(t *testing.T, m *Model, regs []uint16) {
	_, _ = DecodeFixed(m, regs, nil)
	inst, err := NewInstance(m, 0, regs)
	if err != nil {
		return
	}
	var walk func(gi *GroupInstance)
	walk = func(gi *GroupInstance) {
		for i := range gi.Group.Points {
			p := &gi.Group.Points[i]
			if p.Type == TypeString {
				_ = inst.StringIn(gi, p.Name)
				continue
			}
			v := inst.ValueAt(gi, i)
			if v.OK && gi.Offset+int(p.Offset)+int(p.Size) > len(inst.Regs) {
				t.Fatalf("model %d point %s decoded past the image", m.ID, p.Name)
			}
		}
		for s := range gi.Sub {
			for j := range gi.Sub[s] {
				walk(&gi.Sub[s][j])
			}
		}
	}
	walk(&inst.Root)
}
