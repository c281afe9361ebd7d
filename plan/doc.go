// Package plan is the day-ahead planner (issue 45, item 3): from prices
// and forecasts per slot it plans the battery, an SG-Ready heat pump and
// a car for the next hours.
//
// Imports: none
package plan
