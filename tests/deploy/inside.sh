#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# deploy.install, inside the booted clean Debian 12 container (install.sh):
# apt install (isergwd started before isergw-api), readiness, I/O through
# libiscsi, the API, the HA agent on corosync, an upgrade (what runs is
# restarted, what the operator stopped stays stopped), a removal and a
# reinstallation (stopped, then started), a clean stop, the units'
# hardening, purge.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive SYSTEMD_COLORS=0 SYSTEMD_PAGER=
# the host's start, as an offset to this shell's SECONDS (install.sh)
T0=${T0:-0}
IQN=iqn.2026-11.org.isergw:default
URL=iscsi://127.0.0.1:3260/$IQN/0
say() { printf '[%4ds]   %s\n' $((SECONDS - T0)) "$*"; }
fail() { say "FAIL: $*"; exit 1; }
t_ms() { date +%s%3N; }

# An HTTP GET on loopback with bash alone (no curl in a minimal root): the
# status code.
http_status() {
	local line
	exec 3<>"/dev/tcp/127.0.0.1/8080" || return 1
	printf 'GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' "$1" >&3
	IFS= read -r line <&3 || true
	exec 3<&-
	line=${line#HTTP/1.? }
	echo "${line%% *}"
}

# The unit's journal since its last start has the daemon's line PATTERN
# before systemd's "Started" line: systemd logged the start as done only
# after the daemon had done what PATTERN says.
ready_after() {
	local unit=$1 pattern=$2 since=$3 j
	j=$(journalctl -q -o cat --since "@$since" -u "$unit" 2>&1)
	local a b
	a=$(grep -n -m1 -- "$pattern" <<<"$j" | cut -d: -f1)
	b=$(grep -n -m1 -- "Started .*$unit\|Started $unit" <<<"$j" | cut -d: -f1)
	if [ -z "$a" ] || [ -z "$b" ] || [ "$a" -gt "$b" ]; then
		echo "$j" | sed 's/^/      /'
		return 1
	fi
}

cd /debs
say "apt install ./isergw_*.deb ./isergw-cli_*.deb corosync"
apt-get install -q -y ./isergw_*.deb ./isergw-cli_*.deb corosync >/tmp/apt.log 2>&1 ||
	{ cat /tmp/apt.log; fail "apt install"; }
say "  $(grep -c '^Setting up' /tmp/apt.log) packages set up"
grep -q 'isergw-api token add' /tmp/apt.log || fail "no message about the first API token"
conf=$(dpkg-query -W -f='${Conffiles}\n' isergw)
for f in /etc/isergw/isergwd.json /etc/isergw/ha.json /etc/default/isergw; do
	grep -q " $f " <<<"$conf" || fail "$f is not a conffile"
done
say "  conffiles: /etc/isergw/isergwd.json /etc/isergw/ha.json /etc/default/isergw"
for u in isergwd isergw-api; do
	[ "$(systemctl is-active $u)" = active ] || fail "$u not started by the package"
	[ "$(systemctl is-enabled $u)" = enabled ] || fail "$u not enabled by the package"
done
# isergw-api started once isergwd was ready (its After= ordering), not before
d_ready=$(systemctl show -p ActiveEnterTimestampMonotonic --value isergwd)
a_start=$(systemctl show -p ExecMainStartTimestampMonotonic --value isergw-api)
[ "$a_start" -ge "$d_ready" ] ||
	fail "isergw-api started (${a_start} us) before isergwd was ready (${d_ready} us)"
[ "$(systemctl is-enabled isergw-ha)" = disabled ] || fail "isergw-ha enabled by the package"
[ "$(systemctl is-active isergw-ha)" = inactive ] || fail "isergw-ha started by the package"
say "  isergwd and isergw-api enabled and running (the API started after isergwd was ready),"
say "  isergw-ha installed only"

say "units: verify, relaxations, systemd-analyze security"
out=$(systemd-analyze verify --man=no /lib/systemd/system/isergw*.service 2>&1) ||
	{ echo "$out"; fail "systemd-analyze verify"; }
[ -z "$out" ] || { echo "$out"; fail "systemd-analyze verify printed messages"; }
# what RDMA, io_uring and block devices need (docs/packaging.md)
[ "$(systemctl show -p DevicePolicy --value isergwd)" = auto ] || fail "isergwd: DevicePolicy"
[ -z "$(systemctl show -p DeviceAllow --value isergwd)" ] || fail "isergwd: DeviceAllow set"
[ "$(systemctl show -p PrivateDevices --value isergwd)" = no ] || fail "isergwd: PrivateDevices"
[ "$(systemctl show -p LimitMEMLOCK --value isergwd)" = infinity ] || fail "isergwd: LimitMEMLOCK"
for u in isergwd isergw-ha isergw-api; do
	say "  $u: $(systemd-analyze security --no-pager $u 2>&1 | tail -1 | sed 's/^→ //')"
done

if [ "${ISERGW_TEST_BREAK:-}" = early-ready ]; then
	say "BREAK: isergwd.service as Type=simple (ready at fork)"
	mkdir -p /etc/systemd/system/isergwd.service.d
	printf '[Service]\nType=simple\n' >/etc/systemd/system/isergwd.service.d/break.conf
	systemctl daemon-reload
fi

say "systemctl stop isergw-api isergwd; systemctl start isergwd"
systemctl stop isergw-api isergwd
since=$(date +%s.%N)
t=$(t_ms)
systemctl start isergwd
say "  started in $(( $(t_ms) - t )) ms; $(systemctl show -p StatusText --value isergwd)"
# the moment start returns, isergwd serves: no retry
iscsi-inq "$URL" >/tmp/inq.txt 2>&1 || { cat /tmp/inq.txt; fail "INQUIRY right after start"; }
isergwctl status >/tmp/st.txt 2>&1 || { cat /tmp/st.txt; fail "control socket right after start"; }
# and systemd logged the start as done only after the portals listened and
# the control socket was up
ready_after isergwd.service 'ready: .* portal' "$since" &&
	ready_after isergwd.service 'control socket /run/isergw/isergwd.sock' "$since" ||
	fail "systemd reported isergwd started before it served (its lines after Started)"
say "  INQUIRY and the control socket answered at once; isergwd's 'ready:' and"
say "  'control socket' lines logged before systemd's 'Started'"

say "systemctl reload isergwd (SIGHUP: RELOADING=1 ... READY=1)"
systemctl reload isergwd || fail "reload"
st=$(systemctl show -p StatusText --value isergwd)
[ "$st" = "/etc/isergw/isergwd.json reloaded" ] || fail "status after reload: $st"
[ "$(systemctl is-active isergwd)" = active ] || fail "isergwd not active after reload"
say "  $st"

say "I/O through libiscsi: iscsi-test-cu --dataloss (write, read, verify)"
before=$(du -k /var/lib/isergw/default-lun.img | cut -f1)
for t in SCSI.Write16 SCSI.Read16 SCSI.Verify16 SCSI.WriteVerify16 SCSI.Write10 SCSI.Read10; do
	iscsi-test-cu --dataloss -t "$t" "$URL" >/tmp/cu.txt 2>&1 || true
	sum=$(grep -A4 'Run Summary' /tmp/cu.txt | awk '$1=="tests"{print "ran " $3 ", passed " $4 ", failed " $5}')
	grep -A4 'Run Summary' /tmp/cu.txt | awk '$1=="tests"{exit !($3 > 0 && $5 == 0)}' ||
		{ cat /tmp/cu.txt; fail "$t"; }
	say "  $t: $sum"
done
after=$(du -k /var/lib/isergw/default-lun.img | cut -f1)
[ "$after" -gt "$before" ] || fail "the LUN file did not grow ($before -> $after KiB)"
say "  the LUN file holds the data written: $before -> $after KiB allocated"
isergwctl counters | sed 's/^/      /'

say "isergw-api: start, readiness, loopback only, no token"
since=$(date +%s.%N)
t=$(t_ms)
systemctl start isergw-api
say "  started in $(( $(t_ms) - t )) ms"
[ "$(http_status /readyz)" = 200 ] || fail "/readyz right after start"
[ "$(http_status /api/v1/cluster)" = 401 ] || fail "/api/v1 without a token"
grep -q ' 0100007F:1F90 00000000:0000 0A' /proc/net/tcp || fail "not listening on 127.0.0.1:8080"
listen=$(grep -h ':1F90 00000000:0000 0A' /proc/net/tcp /proc/net/tcp6 || true)
[ "$(grep -vc ' 0100007F:1F90 ' <<<"$listen")" -eq 0 ] || fail "isergw-api listens beyond loopback"
ready_after isergw-api.service 'serving http://' "$since" || fail "isergw-api ready too early"
say "  /readyz 200 at once, /api/v1 401 (no token), 127.0.0.1:8080 only"

say "isergw-ha after corosync"
systemctl is-active -q corosync || systemctl start corosync
since=$(date +%s.%N)
systemctl start isergw-ha || { journalctl -u isergw-ha --no-pager | tail -20; fail "isergw-ha start"; }
ready_after isergw-ha.service 'agent of node [0-9]* joined the group' "$since" || fail "isergw-ha ready too early"
isergwctl cluster status >/tmp/cs.txt 2>&1 || { cat /tmp/cs.txt; fail "isergwctl cluster status"; }
sed -n '1,6s/^/      /p' /tmp/cs.txt

say "an upgrade (the same packages again): what runs restarts, what was stopped stays stopped"
systemctl stop isergw-api
pid_d=$(systemctl show -p MainPID --value isergwd)
pid_h=$(systemctl show -p MainPID --value isergw-ha)
dpkg -i ./isergw_*.deb >/tmp/upgrade.log 2>&1 || { cat /tmp/upgrade.log; fail "dpkg -i (upgrade)"; }
[ "$(systemctl is-active isergw-api)" = inactive ] || fail "the upgrade started isergw-api, which was stopped"
[ "$(systemctl is-active isergwd)" = active ] || fail "isergwd not running after the upgrade"
[ "$(systemctl is-active isergw-ha)" = active ] || fail "isergw-ha not running after the upgrade"
[ "$(systemctl show -p MainPID --value isergwd)" != "$pid_d" ] || fail "isergwd not restarted by the upgrade"
[ "$(systemctl show -p MainPID --value isergw-ha)" != "$pid_h" ] || fail "isergw-ha not restarted by the upgrade"
say "  isergwd and isergw-ha restarted, isergw-api (stopped) left stopped"
systemctl start isergw-api
systemctl stop corosync
[ "$(systemctl is-active isergw-ha)" != active ] || fail "isergw-ha still runs without corosync"
say "  ready once joined; stopped with corosync (Requires=)"

say "apt remove isergw, then install it again: stopped at the removal, started again"
apt-get remove -q -y isergw >/tmp/remove.log 2>&1 || { cat /tmp/remove.log; fail "apt remove"; }
for u in isergwd isergw-api isergw-ha; do
	[ "$(systemctl is-active $u)" != active ] || fail "$u still runs after apt remove"
done
dpkg -i ./isergw_*.deb >/tmp/reinstall.log 2>&1 || { cat /tmp/reinstall.log; fail "dpkg -i (reinstall)"; }
for u in isergwd isergw-api; do
	[ "$(systemctl is-active $u)" = active ] || fail "$u not started again by the reinstallation"
done
[ ! -e /run/isergw/package-reinstall ] || fail "the reinstallation left its mark"
say "  isergwd and isergw-api running again"

say "systemctl stop: clean"
t=$(t_ms)
systemctl stop isergw-api isergwd
say "  stopped in $(( $(t_ms) - t )) ms"
for u in isergwd isergw-api isergw-ha; do
	r=$(systemctl show -p Result --value $u)
	s=$(systemctl show -p ExecMainStatus --value $u)
	[ "$r" = success ] && [ "$s" = 0 ] || fail "$u stopped with result $r, status $s"
done
# (no pipe into grep -q: with pipefail, journalctl's SIGPIPE would fail it)
j=$(journalctl -q -o cat -u isergwd)
grep -q 'notice main: stopped' <<<"$j" || fail "isergwd did not log its stop"
[ ! -e /run/isergw/isergwd.sock ] || fail "isergwd left its socket"

say "apt purge"
apt-get purge -q -y isergw isergw-cli >/tmp/purge.log 2>&1 ||
	{ cat /tmp/purge.log; fail "apt purge"; }
left=$(dpkg -l 'isergw*' 2>/dev/null | awk '/^[a-z][a-z] /{print $1, $2}' | grep -v '^un\|^pn' || true)
[ -z "$left" ] || fail "packages left: $left"
for f in /usr/sbin/isergwd /usr/sbin/isergw-ha /usr/sbin/isergw-api /usr/sbin/isergwctl \
	 /etc/isergw /etc/default/isergw /lib/systemd/system/isergwd.service \
	 /etc/systemd/system/multi-user.target.wants/isergwd.service /run/isergw; do
	[ ! -e "$f" ] || fail "$f left after purge"
done
for p in isergwd isergw-ha isergw-api; do
	! pgrep -x $p >/dev/null || fail "$p still runs"
done
[ -s /var/lib/isergw/default-lun.img ] || fail "the data (/var/lib/isergw) was removed"
say "  nothing left but /var/lib/isergw: $(ls /var/lib/isergw | tr '\n' ' ')"
