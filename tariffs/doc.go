// Package tariffs knows what grid power costs the plant's owner and what
// feed-in pays, per time slot: a fixed time-of-use table, or day-ahead
// market prices fetched from the ENTSO-E Transparency Platform or
// aWATTar, with the supplier's surcharge and VAT, and a fixed or
// market-based feed-in tariff (the config section is
// tariffs/tariffconfig's).
//
// # Documents
//
// ENTSO-E answers a day-ahead price query (documentType A44,
// in_Domain = out_Domain = the bidding zone's EIC code, periodStart and
// periodEnd in UTC as yyyyMMddHHmm, securityToken) with a
// Publication_MarketDocument: TimeSeries, each with Periods of a
// timeInterval (start, end: "2024-10-05T22:00Z"), a resolution (PT60M,
// PT15M, PT30M) and Points (position from 1, price.amount in EUR/MWh).
// With curveType A03 a position whose price equals the one before is left
// out; [ParseENTSOE] fills it forward, to the end of the period. A
// document may hold several TimeSeries over the same hours, told apart by
// classificationSequence_AttributeInstanceComponent.position (in
// DE-LU in 2024 the hourly day-ahead auction as 1 and a 15-minute one as
// 2): where they overlap the lowest position wins, as the platform
// shows it. When no prices exist the platform answers an
// Acknowledgement_MarketDocument with a Reason ("No matching data
// found"): [ErrNoData]. aWATTar's market data
// (https://api.awattar.de/v1/marketdata?start=ms&end=ms) is JSON,
// {"object":"list","data":[{"start_timestamp","end_timestamp" (Unix ms),
// "marketprice","unit":"Eur/MWh"}]} ([ParseAWATTar]). testdata holds a
// published document of each, with its source (testdata/README.md).
//
// # Fetching
//
// [Service.Run] is one goroutine. It needs the horizon: today and, from
// 12:00 UTC (the exchanges publish the next day's prices around 13:00
// CET), tomorrow, in the plant's time zone. Prices are stored
// (store.PutPrices, one row per interval and source), so a restart reads
// them instead of asking again; no request is made while the horizon is
// stored, and the latest stored fetch time holds a restart's first
// request back to the hour. Otherwise it asks for the missing days, at most once an hour
// per provider (wall clock), and after a failure later still
// (internal/backoff: 1 h doubling to 4 h). A failure (the provider down,
// an HTTP error, a malformed document) keeps the last good prices and
// marks them stale (Status.Stale, plantd_tariff_stale), logged once per
// episode at Warn with the next line at Info when prices arrive again; a
// provider that has no prices yet for tomorrow (ErrNoData) is not a
// failure. Requests have a 30 s timeout and read at most 4 MiB; the
// security token is never logged (errors carry the URL without its
// query).
//
// # Prices
//
// [Service.Slots] gives, for a time range, the slots (start, end, import
// and feed-in price in EUR/kWh, source, stale): market slots at the
// provider's resolution, with import = (market + surcharge) × (1 +
// VAT/100) and feed-in = market + offset; fixed prices cut at the
// time-of-use windows' edges and at every full hour. Where a market price
// is missing the fixed table (and fixed feed-in) is the fallback; with
// none the slot is left out. The planner, the page and the publishers
// read it; GET /gateway/v1/tariffs shows it.
//
// # Import boundary
//
// It imports the standard library, plantd/store (the price rows),
// plantd/metrics (its collector), plantd/internal/backoff and
// tariffs/tariffconfig.
//
// Imports: plantd/store, plantd/metrics, plantd/internal/backoff, plantd/tariffs/tariffconfig
package tariffs
