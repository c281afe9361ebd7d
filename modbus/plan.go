package modbus

import (
	"cmp"
	"slices"
	"sort"
)

// Range is a block of Count registers from Addr.
type Range struct {
	Addr, Count uint16
}

// end returns the register after the range, as an int so 65535+1 fits.
func (r Range) end() int { return int(r.Addr) + int(r.Count) }

// Contains reports whether every register of o lies in r.
func (r Range) Contains(o Range) bool {
	return o.Addr >= r.Addr && o.end() <= r.end()
}

// overlaps reports whether [start, end) shares a register with r.
func (r Range) overlaps(start, end int) bool {
	return r.Count > 0 && start < r.end() && int(r.Addr) < end
}

// PlanOptions tune [Plan].
type PlanOptions struct {
	// MaxRegs is the most registers per read. 0 means 125, the Modbus limit.
	// Larger values are capped at 125.
	MaxRegs uint16
	// MaxGap is the largest hole of unneeded registers that a read spans to
	// save a request. 0 merges only overlapping and adjacent ranges.
	MaxGap uint16
	// Forbidden lists registers that must never be read, for example a model
	// whose registers fault or have read side effects. Plan never reads over
	// a hole that touches one. A needed range that overlaps one is still
	// read, because callers must not need forbidden registers.
	Forbidden []Range
}

// Read is one planned read request.
type Read struct {
	Range
	// Parts are the indexes into need of the ranges this read covers, in
	// ascending order.
	Parts []int
}

// planItem is a needed range (or a chunk of an oversize one) with its index
// in need.
type planItem struct {
	start, end int
	part       int
}

// Plan merges the needed ranges into as few reads as its greedy rules find,
// each of at most opt.MaxRegs registers. The rules, in address order:
//
//   - Overlapping and adjacent ranges, and ranges apart by at most
//     opt.MaxGap unneeded registers, share a read, as long as it stays within
//     MaxRegs and the hole between them touches no opt.Forbidden range.
//   - A needed range of at most MaxRegs is never split across two reads, so
//     a value and its scale factor come in the same request. If it does not
//     fit in the current read, it starts a new one. The new read may re-read
//     registers of an overlapping range.
//   - A needed range longer than MaxRegs is split into chunks of MaxRegs
//     registers (the last one shorter), from its start. Each chunk is planned
//     like a range of its own, and the need's index appears in the Parts of
//     every read that holds a chunk of it. [Read.Slice] then returns only
//     this read's share of it.
//
// Ranges with Count 0 are ignored, and ranges past register 65535 are cut
// there. The output is sorted by address and depends only on the input.
func Plan(need []Range, opt PlanOptions) []Read {
	maxRegs := int(opt.MaxRegs)
	if maxRegs == 0 || maxRegs > MaxReadRegisters {
		maxRegs = MaxReadRegisters
	}
	items := make([]planItem, 0, len(need))
	for i, r := range need {
		start, end := int(r.Addr), r.end()
		end = min(end, 0x10000)
		for start < end {
			n := min(end-start, maxRegs)
			items = append(items, planItem{start: start, end: start + n, part: i})
			start += n
		}
	}
	if len(items) == 0 {
		return nil
	}
	// sort.Slice: no sort instantiated for this struct (binary size); a
	// plan is made at discovery, not per poll.
	sort.Slice(items, func(i, j int) bool {
		a, b := &items[i], &items[j]
		return cmp.Or(cmp.Compare(a.start, b.start), cmp.Compare(b.end, a.end), cmp.Compare(a.part, b.part)) < 0
	})

	// The parts of each read are a contiguous run of items, so all reads
	// share one backing array.
	parts := make([]int, len(items))
	for i, it := range items {
		parts[i] = it.part
	}
	var reads []Read
	first, start, end := 0, items[0].start, items[0].end
	for i := 1; i <= len(items); i++ {
		if i < len(items) && canJoin(start, end, items[i], maxRegs, int(opt.MaxGap), opt.Forbidden) {
			end = max(end, items[i].end)
			continue
		}
		reads = append(reads, Read{
			Range: Range{Addr: uint16(start), Count: uint16(end - start)},
			Parts: sortedUnique(parts[first:i:i]),
		})
		if i < len(items) {
			first, start, end = i, items[i].start, items[i].end
		}
	}
	return reads
}

// canJoin reports whether item can join the read [start, end).
func canJoin(start, end int, it planItem, maxRegs, maxGap int, forbidden []Range) bool {
	if max(end, it.end)-start > maxRegs {
		return false
	}
	if it.start <= end {
		return true // overlapping or adjacent: no unneeded register in between
	}
	if it.start-end > maxGap {
		return false
	}
	for _, f := range forbidden {
		if f.overlaps(end, it.start) {
			return false
		}
	}
	return true
}

// sortedUnique sorts s and drops repeats (a need's chunks never share a read,
// but the rule costs nothing).
func sortedUnique(s []int) []int {
	slices.Sort(s)
	return slices.Compact(s)
}

// Slice returns the registers of part from regs, the result of reading r. If
// part is only partly in r (a chunk of an oversize need), it returns the share
// in r. It returns nil if part and r do not overlap or regs is shorter than r.
// The result shares regs' memory.
func (r Read) Slice(regs []uint16, part Range) []uint16 {
	start := max(int(part.Addr), int(r.Addr))
	end := min(part.end(), r.end())
	if start >= end || len(regs) < int(r.Count) {
		return nil
	}
	off := int(r.Addr)
	return regs[start-off : end-off : end-off]
}
