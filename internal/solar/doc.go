// Package solar is the sun's geometry and the clear sky, defined once for
// the simulator (sim: the PV its inverters make) and the PV forecast
// (forecast: the curve the plant's history is fitted to): the solar
// elevation at a place and time (Cooper's declination, the hour angle with
// the equation of time; good to a degree or so) and the Haurwitz
// clear-sky global horizontal irradiance. Pure functions, no state, no
// allocation.
//
// Imports: none
package solar
