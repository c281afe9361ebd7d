package modbus

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

func rd(addr, count uint16, parts ...int) Read {
	return Read{Range: Range{Addr: addr, Count: count}, Parts: parts}
}

func TestPlan(t *testing.T) {
	tests := []struct {
		name string
		need []Range
		opt  PlanOptions
		want []Read
	}{
		{name: "empty", need: nil, want: nil},
		{name: "only empty ranges", need: []Range{{100, 0}}, want: nil},
		{name: "one range", need: []Range{{40000, 10}}, want: []Read{rd(40000, 10, 0)}},
		{name: "merge adjacent", need: []Range{{10, 5}, {15, 5}}, want: []Read{rd(10, 10, 0, 1)}},
		{name: "unsorted input", need: []Range{{30, 2}, {10, 5}, {15, 5}}, opt: PlanOptions{MaxGap: 10},
			want: []Read{rd(10, 22, 0, 1, 2)}},
		{name: "gap without MaxGap", need: []Range{{10, 5}, {16, 5}}, want: []Read{rd(10, 5, 0), rd(16, 5, 1)}},
		{name: "gap within MaxGap", need: []Range{{10, 5}, {20, 5}}, opt: PlanOptions{MaxGap: 5},
			want: []Read{rd(10, 15, 0, 1)}},
		{name: "gap over MaxGap", need: []Range{{10, 5}, {21, 5}}, opt: PlanOptions{MaxGap: 5},
			want: []Read{rd(10, 5, 0), rd(21, 5, 1)}},
		{name: "forbidden gap", need: []Range{{10, 5}, {20, 5}},
			opt:  PlanOptions{MaxGap: 50, Forbidden: []Range{{17, 1}}},
			want: []Read{rd(10, 5, 0), rd(20, 5, 1)}},
		{name: "forbidden range next to the gap", need: []Range{{10, 5}, {20, 5}},
			opt:  PlanOptions{MaxGap: 50, Forbidden: []Range{{25, 10}, {0, 10}}},
			want: []Read{rd(10, 15, 0, 1)}},
		{name: "forbidden gap between needs, later ones still merge", need: []Range{{0, 4}, {10, 4}, {20, 4}},
			opt:  PlanOptions{MaxGap: 10, Forbidden: []Range{{5, 2}}},
			want: []Read{rd(0, 4, 0), rd(10, 14, 1, 2)}},
		{name: "overlapping inputs", need: []Range{{10, 10}, {15, 10}, {12, 2}},
			want: []Read{rd(10, 15, 0, 1, 2)}},
		{name: "duplicate inputs", need: []Range{{10, 4}, {10, 4}}, want: []Read{rd(10, 4, 0, 1)}},
		{name: "MaxRegs default 125", need: []Range{{0, 100}, {100, 25}, {125, 1}},
			want: []Read{rd(0, 125, 0, 1), rd(125, 1, 2)}},
		{name: "MaxRegs above 125 capped", need: []Range{{0, 100}, {100, 26}}, opt: PlanOptions{MaxRegs: 200},
			want: []Read{rd(0, 100, 0), rd(100, 26, 1)}},
		{name: "range over 125 split", need: []Range{{40000, 300}},
			want: []Read{rd(40000, 125, 0), rd(40125, 125, 0), rd(40250, 50, 0)}},
		{name: "split chunk merges with next", need: []Range{{0, 130}, {130, 20}},
			want: []Read{rd(0, 125, 0), rd(125, 25, 0, 1)}},
		{name: "no split when packing", need: []Range{{0, 100}, {100, 50}},
			want: []Read{rd(0, 100, 0), rd(100, 50, 1)}},
		{name: "no split of an overlapping range", need: []Range{{0, 100}, {90, 40}},
			want: []Read{rd(0, 100, 0), rd(90, 40, 1)}},
		{name: "small MaxRegs", need: []Range{{0, 2}, {2, 2}, {4, 2}, {6, 3}}, opt: PlanOptions{MaxRegs: 4},
			want: []Read{rd(0, 4, 0, 1), rd(4, 2, 2), rd(6, 3, 3)}},
		{name: "contained range joins", need: []Range{{0, 125}, {50, 2}}, want: []Read{rd(0, 125, 0, 1)}},
		{name: "end of address space", need: []Range{{65530, 20}}, want: []Read{rd(65530, 6, 0)}},
		{name: "sunspec-like", need: []Range{{40002, 66}, {40070, 2}, {40072, 50}, {40124, 2}, {40200, 10}},
			opt:  PlanOptions{MaxGap: 8},
			want: []Read{rd(40002, 124, 0, 1, 2, 3), rd(40200, 10, 4)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Plan(tt.need, tt.opt)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Plan(%v)\n got %v\nwant %v", tt.need, got, tt.want)
			}
			checkPlan(t, tt.need, tt.opt, got)
		})
	}
}

// checkPlan checks the invariants of any plan: reads within MaxRegs, every
// need covered, needs that fit kept whole, no forbidden register in a gap.
func checkPlan(t *testing.T, need []Range, opt PlanOptions, reads []Read) {
	t.Helper()
	maxRegs := int(opt.MaxRegs)
	if maxRegs == 0 || maxRegs > MaxReadRegisters {
		maxRegs = MaxReadRegisters
	}
	covered := make(map[int]bool)
	for _, r := range reads {
		if r.Count == 0 || int(r.Count) > maxRegs {
			t.Errorf("read %v: size out of 1..%d", r, maxRegs)
		}
		for _, p := range r.Parts {
			n := need[p]
			n.Count = uint16(min(n.end(), 0x10000) - int(n.Addr)) // Plan cuts at 65535
			if int(n.Count) <= maxRegs && !r.Contains(n) {
				t.Errorf("read %v holds only part of need %v", r, n)
			}
		}
		for reg := int(r.Addr); reg < r.end(); reg++ {
			inNeed := false
			for _, n := range need {
				inNeed = inNeed || (reg >= int(n.Addr) && reg < n.end())
			}
			covered[reg] = covered[reg] || inNeed
			for _, f := range opt.Forbidden {
				if !inNeed && f.overlaps(reg, reg+1) {
					t.Errorf("read %v reads forbidden register %d", r, reg)
				}
			}
		}
	}
	for _, n := range need {
		for reg := int(n.Addr); reg < min(n.end(), 0x10000); reg++ {
			if !covered[reg] {
				t.Errorf("need %v: register %d not read", n, reg)
			}
		}
	}
}

func TestPlanDeterministic(t *testing.T) {
	need := []Range{{50, 3}, {10, 4}, {10, 4}, {14, 1}, {200, 130}, {60, 2}}
	opt := PlanOptions{MaxGap: 6}
	first := Plan(need, opt)
	for i := range 20 {
		shuffled := slices.Clone(need)
		// Rotate: same ranges, other order; indexes change with it.
		shuffled = append(shuffled[i%len(need):], shuffled[:i%len(need)]...)
		got := Plan(shuffled, opt)
		if len(got) != len(first) {
			t.Fatalf("order %d: %d reads, want %d", i, len(got), len(first))
		}
		for j := range got {
			if got[j].Range != first[j].Range {
				t.Errorf("order %d: read %d is %v, want %v", i, j, got[j].Range, first[j].Range)
			}
		}
		if again := Plan(shuffled, opt); !reflect.DeepEqual(again, got) {
			t.Errorf("order %d: two runs differ", i)
		}
	}
}

func TestReadSlice(t *testing.T) {
	r := rd(100, 10)
	regs := make([]uint16, 10)
	for i := range regs {
		regs[i] = uint16(100 + i)
	}
	tests := []struct {
		part Range
		want []uint16
	}{
		{Range{100, 10}, regs},
		{Range{102, 2}, []uint16{102, 103}},
		{Range{109, 1}, []uint16{109}},
		{Range{95, 7}, []uint16{100, 101}},  // only partly in r
		{Range{108, 5}, []uint16{108, 109}}, // only partly in r
		{Range{110, 1}, nil},
		{Range{90, 10}, nil},
		{Range{105, 0}, nil},
	}
	for _, tt := range tests {
		got := r.Slice(regs, tt.part)
		if !slices.Equal(got, tt.want) || (tt.want == nil) != (got == nil) {
			t.Errorf("Slice(%v) = %v, want %v", tt.part, got, tt.want)
		}
	}
	if got := r.Slice(regs[:5], Range{100, 1}); got != nil {
		t.Errorf("short regs: got %v, want nil", got)
	}
	// The result must not let an append clobber the next registers.
	s := r.Slice(regs, Range{100, 2})
	_ = append(s, 0)
	if regs[2] != 102 {
		t.Error("append to a slice overwrote the read")
	}
}

// TestPlanRandom checks the invariants of Plan on random inputs.
func TestPlanRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 500 {
		need := make([]Range, rng.IntN(12))
		for j := range need {
			need[j] = Range{Addr: uint16(rng.IntN(600)), Count: uint16(rng.IntN(140))}
		}
		opt := PlanOptions{MaxRegs: uint16(rng.IntN(130)), MaxGap: uint16(rng.IntN(20))}
		for range rng.IntN(3) {
			opt.Forbidden = append(opt.Forbidden, Range{Addr: uint16(rng.IntN(700)), Count: uint16(1 + rng.IntN(10))})
		}
		t.Run(fmt.Sprint(i), func(t *testing.T) { checkPlan(t, need, opt, Plan(need, opt)) })
	}
}
