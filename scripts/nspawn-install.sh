#!/usr/bin/env bash
# Installs a built plantd .deb into a Debian 12 root booted with
# systemd-nspawn -b, as an installer's "apt install" on a fresh gateway,
# and prints what the installer sees: the service's state and status line,
# its journal (the first-run message, no connection attempt), a reload
# with an invalid config (it fails, the daemon keeps running) and with the
# valid one again, token add, plantd --version; then RS485 under the
# packaged unit: a socat pty pair whose one end is /dev/ttyUSB0 (group
# dialout, as udev makes an adapter's) and whose other end "plantd sim
# --serial" serves, a config naming the port (check-config as root, and
# the fix it names for a config plantd cannot read), the service polling
# the meter through the port, a plantd scan of the held port refused, and
# systemd-analyze security's exposure (at most 2.0). Not in CI: it takes
# a minute or two and root.
#
#   scripts/nspawn-install.sh DEB [ROOT]
#
# ROOT is a Debian 12 root made with (about 50 s through Debian's mirror)
#   debootstrap --variant=minbase --include=systemd,systemd-sysv,dbus,adduser,procps,socat \
#       bookworm ROOT http://deb.debian.org/debian
# (socat makes the pty pair of the RS485 checks; a root without it skips
# them, and they are listed as FAIL).
# and is made so when it does not exist (default: a new temporary one).
# The root is copied for the run, so one debootstrap serves many runs.
# Needs systemd-nspawn (apt-get install systemd-container) and debootstrap.
# Exit 0 when every check passed; the checks are listed as PASS/FAIL.
set -euo pipefail

deb=${1:?usage: $0 DEB [ROOT]}
deb=$(realpath "$deb")
root=${2:-}
work=$(mktemp -d /tmp/plantd-nspawn.XXXXXX)
trap 'rm -rf "$work"' EXIT

if [ -z "$root" ] || [ ! -d "$root" ]; then
	root=${root:-$work/base}
	echo "== debootstrap Debian 12 into $root"
	debootstrap --variant=minbase --include=systemd,systemd-sysv,dbus,adduser,procps,socat \
		bookworm "$root" http://deb.debian.org/debian >"$work/debootstrap.log" 2>&1 ||
		{ tail -20 "$work/debootstrap.log"; exit 1; }
fi
echo "== copy of $root"
cp -a "$root" "$work/root"
r=$work/root
cp "$deb" "$r/root/plantd.deb"

# The installer's session, run inside the booted container by a unit
# after multi-user.target; it powers the container off when done.
cat >"$r/root/installer.sh" <<'EOF'
#!/bin/sh
exec >/root/installer.log 2>&1
step() { echo; echo "## $*"; }
check() { if eval "$2"; then echo "PASS: $1"; else echo "FAIL: $1"; fi; }
wait_active() {
	i=0
	while [ "$(systemctl show -P ActiveState plantd)" != active ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
}
step "apt-get install ./plantd.deb"
apt-get install -y /root/plantd.deb 2>&1 | tail -4
wait_active
step "systemctl status plantd"
systemctl status plantd --no-pager -l | sed -n '1,12p'
step "journalctl -u plantd"
journalctl -u plantd --no-pager -o short-monotonic
step "installed config and example"
grep -nE '^(devices|tokens|oauthClients):|^  listen:|^  - id:|^    name:' /etc/plantd/plantd.yaml
ls -l /etc/plantd/plantd.yaml /usr/share/doc/plantd/
j=$(journalctl -u plantd --no-pager)
check "service active" '[ "$(systemctl show -P ActiveState plantd)" = active ]'
check "journal has the first-run message" 'echo "$j" | grep -q "no devices configured: run \`plantd scan HOST\`"'
check "status line has the first-run message" 'systemctl show -P StatusText plantd | grep -q "^no devices configured"'
check "no device or Modbus line in the journal" '! echo "$j" | grep -qiE "device=|modbus|192\.168\."'
check "API on loopback only" 'echo "$j" | grep -q "http api listening.*addr=127.0.0.1:8080"'

step "systemctl reload with an invalid config"
cp /etc/plantd/plantd.yaml /root/good.yaml
sed -i 's/^devices: \[\]$/devices: [{id: inv1, host: 192.0.2.1, unit: 300}]/' /etc/plantd/plantd.yaml
pid=$(systemctl show -P MainPID plantd)
systemctl reload plantd; rc=$?
echo "systemctl reload exit $rc"
journalctl -u plantd --no-pager -n 6 -o cat
check "reload of an invalid config fails" '[ $rc -ne 0 ]'
check "the daemon runs on (same pid, active)" '[ "$(systemctl show -P MainPID plantd)" = "$pid" ] && [ "$(systemctl show -P ActiveState plantd)" = active ]'
check "journal names the problem" 'journalctl -u plantd --no-pager | grep -q "devices\[0\].unit: 300 is not a Modbus unit id (0..247 or 255)"'
step "systemctl reload with the valid config again"
cp /root/good.yaml /etc/plantd/plantd.yaml
systemctl reload plantd; rc=$?
echo "systemctl reload exit $rc"
check "reload of a valid config succeeds" '[ $rc -eq 0 ]'

step "plantd token add (twice)"
plantd token add --name laptop --role installer | sed 's/secret): .*/secret): (token)/'
plantd token add --name scada --role standard | sed 's/secret): .*/secret): (token)/'
sed -n '/^tokens:/,/^$/p' /etc/plantd/plantd.yaml
ls -l /etc/plantd/plantd.yaml
check "one block entry per token" '[ "$(grep -c "^  - name: " /etc/plantd/plantd.yaml)" = 2 ] && ! grep -q "none yet" /etc/plantd/plantd.yaml'
check "config stays root:plantd 0640" '[ "$(stat -c %U:%G:%a /etc/plantd/plantd.yaml)" = root:plantd:640 ]'
systemctl reload plantd
step "plantd --version"
plantd --version; check "plantd --version exits 0" 'plantd --version >/dev/null'
step "plantd backup"
plantd backup /root/copy.db && ls -l /root/copy.db
check "backup is 0600" '[ "$(stat -c %a /root/copy.db)" = 600 ]'

step "RS485: a pty pair, /dev/ttyUSB0 (root:dialout 0660) and /dev/ttySIM, plantd sim --serial on /dev/ttySIM"
systemd-run --quiet --unit=rs485-line socat pty,link=/dev/ttyUSB0,raw,echo=0,group=dialout,mode=660 pty,link=/dev/ttySIM,raw,echo=0
i=0; while { [ ! -e /dev/ttyUSB0 ] || [ ! -e /dev/ttySIM ]; } && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
ls -lL /dev/ttyUSB0
systemd-run --quiet --unit=rs485-sim plantd sim --serial /dev/ttySIM --baud 9600
cp -p /etc/plantd/plantd.yaml /root/before-serial.yaml
sed -i 's|^devices: \[\]$|devices:\n  - {id: meter, serial: {port: /dev/ttyUSB0, baud: 9600}, unit: 1, pollInterval: 2s}|' /etc/plantd/plantd.yaml
grep -n -A1 '^devices:' /etc/plantd/plantd.yaml
step "sudo plantd check-config, the config root's only, then as packaged"
chmod 0600 /etc/plantd/plantd.yaml; chown root:root /etc/plantd/plantd.yaml
plantd check-config /etc/plantd/plantd.yaml; rc=$?
echo "exit $rc"
out=$(plantd check-config /etc/plantd/plantd.yaml 2>&1)
check "check-config refuses a config plantd cannot read, naming the fix" '[ $rc -eq 78 ] && echo "$out" | grep -q "fix: chown root:plantd /etc/plantd/plantd.yaml; chmod 0640 /etc/plantd/plantd.yaml"'
chown root:plantd /etc/plantd/plantd.yaml; chmod 0640 /etc/plantd/plantd.yaml
plantd check-config /etc/plantd/plantd.yaml; rc=$?
check "check-config passes the serial config (the port reachable through dialout)" '[ $rc -eq 0 ]'
step "systemctl restart plantd: the packaged service polls the meter on /dev/ttyUSB0"
systemctl restart plantd
wait_active
i=0; while ! journalctl -u plantd --no-pager -o cat | grep -q 'device online.*device=meter' && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
systemctl status plantd --no-pager -l | sed -n '1,8p'
journalctl -u plantd --no-pager -o cat | grep -E 'device=meter|serial|ttyUSB0' | tail -5
check "service active with the serial device" '[ "$(systemctl show -P ActiveState plantd)" = active ]'
check "the meter on /dev/ttyUSB0 is online" 'journalctl -u plantd --no-pager -o cat | grep -q "device online.*device=meter"'
step "plantd scan --serial /dev/ttyUSB0 while the service holds it"
for n in 1 2 3; do
	out=$(plantd scan --serial /dev/ttyUSB0 --units 1-2 2>&1); rc=$?
	echo "$out"; echo "exit $rc"
	check "scan $n is refused, naming the daemon" '[ $rc -eq 1 ] && echo "$out" | grep -q "/dev/ttyUSB0 is held by plantd (pid $(systemctl show -P MainPID plantd))"'
done
sleep 5 # two more polls of the meter (every 2 s) after the scans
check "the meter stays online (no warning of it)" '! journalctl -u plantd --no-pager -o cat | grep "device=meter" | grep -q "level=WARN"'
step "systemd-analyze security plantd"
systemd-analyze security plantd --no-pager | tail -1
exposure=$(systemd-analyze security plantd --no-pager | sed -n 's/.*Overall exposure level for plantd.service: \([0-9.]*\).*/\1/p')
check "exposure $exposure <= 2.0" 'awk -v e="$exposure" "BEGIN { exit !(e != \"\" && e <= 2.0) }"'
cp /root/before-serial.yaml /etc/plantd/plantd.yaml
echo; echo "## done"
systemctl poweroff
EOF
chmod +x "$r/root/installer.sh"
cat >"$r/etc/systemd/system/installer.service" <<'EOF'
[Unit]
Description=the installer's session (scripts/nspawn-install.sh)
After=multi-user.target
[Service]
Type=oneshot
ExecStart=/root/installer.sh
[Install]
WantedBy=multi-user.target
EOF
ln -s /etc/systemd/system/installer.service "$r/etc/systemd/system/multi-user.target.wants/installer.service"

echo "== systemd-nspawn -b (the container powers off when the session is done)"
timeout 300 systemd-nspawn -q -D "$r" -b --register=no --keep-unit --private-network --machine=plantd-inst \
	>"$work/console.log" 2>&1 </dev/null || { echo "systemd-nspawn: exit $?"; tail -30 "$work/console.log"; }
if [ ! -f "$r/root/installer.log" ]; then
	echo "no installer log: the session did not run"; tail -30 "$work/console.log"; exit 1
fi
cat "$r/root/installer.log"
! grep -q '^FAIL' "$r/root/installer.log"
