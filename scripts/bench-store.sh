#!/bin/sh
# Benchmarks of plantd/store (issue 5): the sustained ingest rate, query
# times on a 20-device plant holding a year of rollups, and the size per
# device-day and bytes written to the disk per sample at the daemon's
# cadence. About two minutes on two cores.
set -eu
cd "$(dirname "$0")/.."
echo "# $(uname -m), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
go test -run '^$' -bench 'Ingest' -benchtime=1000000x ./store/
go test -run '^$' -bench 'Query' ./store/
go test -run '^$' -bench 'DeviceDay|Layout' -benchtime=1x -timeout 30m ./store/
