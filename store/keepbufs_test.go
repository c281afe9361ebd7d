package store

import "testing"

// TestSampleBufsKeep: the rollup's sample buffers are kept for the next
// chunk only for a plant of at most keepBufsDevices devices and while
// their arrays take at most keepBufsBytes; whatever they kept pointing to
// besides their arrays is let go.
func TestSampleBufsKeep(t *testing.T) {
	tests := []struct {
		name           string
		devices, free  int
		samples, slabs int // per free devSamples, and value slabs
		want           bool
	}{
		{"small plant", 20, 13, 420, 17, true},
		{"at the device bound", keepBufsDevices, 13, 420, 17, true},
		{"large plant, small batches", keepBufsDevices + 1, 13, 420, 17, false},
		{"1,000 devices", 1000, 409, 20, 17, false},
		{"small plant, arrays too big", 20, 20, 4096, 32, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &sampleBufs{}
			prev := &rawSample{t: 1}
			for range tt.free {
				b.free = append(b.free, &devSamples{dev: &device{}, prev: prev, next: prev, samples: make([]rawSample, 0, tt.samples)})
			}
			vs := &valSlabs{}
			for range tt.slabs {
				vs.slabs = append(vs.slabs, make([]chVal, 0, slabVals))
			}
			b.slabs = append(b.slabs, vs)
			got := b.keep(tt.devices)
			if (got != nil) != tt.want {
				t.Fatalf("keep(%d) kept %v, want %v", tt.devices, got != nil, tt.want)
			}
			if got == nil {
				return
			}
			for _, ds := range got.free {
				if ds.dev != nil || ds.prev != nil || ds.next != nil || ds.lead != nil {
					t.Fatalf("kept buffers still point to a device or samples: %+v", ds)
				}
				if cap(ds.samples) != tt.samples {
					t.Fatalf("kept array of %d samples, want %d", cap(ds.samples), tt.samples)
				}
			}
		})
	}
}
