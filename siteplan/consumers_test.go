package siteplan

import (
	"testing"
	"time"

	"plantd/consumer"
)

// TestCarChanged: the plan is made again at the next look when a
// charger's Plan is set or ends, its deadline or target grows, or the car
// is plugged in or out; not while charging lowers what remains.
func TestCarChanged(t *testing.T) {
	by := time.Date(2026, 12, 7, 7, 0, 0, 0, time.UTC)
	car := func(f func(*consumer.FlexCar)) *consumer.FlexCar {
		c := &consumer.FlexCar{ID: "wallbox", RemainingWh: 10000, Deadline: by, Connected: true}
		if f != nil {
			f(c)
		}
		return c
	}
	tests := []struct {
		name     string
		was, now *consumer.FlexCar
		want     bool
	}{
		{"none", nil, nil, false},
		{"set", nil, car(nil), true},
		{"ended", car(nil), nil, true},
		{"the same", car(nil), car(nil), false},
		{"charging lowers what remains", car(nil), car(func(c *consumer.FlexCar) { c.RemainingWh = 9000 }), false},
		{"a larger target", car(nil), car(func(c *consumer.FlexCar) { c.RemainingWh = 20000 }), true},
		{"a new deadline", car(nil), car(func(c *consumer.FlexCar) { c.Deadline = by.Add(time.Hour) }), true},
		{"unplugged", car(nil), car(func(c *consumer.FlexCar) { c.Connected = false }), true},
		{"another charger", car(nil), car(func(c *consumer.FlexCar) { c.ID = "garage" }), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := carChanged(tt.was, tt.now); got != tt.want {
				t.Errorf("carChanged = %v, want %v", got, tt.want)
			}
		})
	}
}
