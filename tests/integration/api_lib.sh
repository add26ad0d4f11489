# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
#
# Helpers for the isergw-api tests (api_metrics.sh, api_prometheus.sh):
# start and stop isergw-api, fetch over HTTP, read one sample of a scrape.
# Source lib.sh first.

# need_tool NAME PACKAGE: a tool these tests cannot do without; exit 77
# (skipped) when it is missing, unless CI=true (then it is a failure).
need_tool() {
	command -v "$1" >/dev/null && return 0
	if [ "${CI:-}" = true ]; then
		die "$1 not found (apt-get install $2)"
	fi
	log "SKIP: $1 not found (apt-get install $2)"
	exit 77
}

# api_start NAME ADDR:PORT ISERGWD_SOCKET [EXTRA ARGS...]: start isergw-api,
# its output in $SCRATCH/NAME.log, and wait until it accepts connections.
# Sets API_PID, API_LOG and API_URL. isergwd gets 5 s to answer (not the
# default 1 s: an ASan isergwd on a loaded machine, beside the VM tests, can
# take longer); EXTRA ARGS come after, so a test of the timeout sets its own.
api_start() {
	local name=$1 listen=$2 sock=$3
	shift 3
	API_LOG=$SCRATCH/$name.log
	API_URL=http://$listen
	: >"$API_LOG"
	if port_open "${listen%:*}" "${listen##*:}"; then
		die "$listen is already in use"
	fi
	log "starting $API --listen $listen --isergwd-socket $sock $*"
	"$API" --listen "$listen" --isergwd-socket "$sock" --isergwd-timeout-ms 5000 \
		--log-level info "$@" >>"$API_LOG" 2>&1 &
	API_PID=$!
	_LIB_DAEMONS+=("$API_PID isergw-api")
	wait_port "$API_PID" "${listen%:*}" "${listen##*:}" || { tail -n 20 "$API_LOG" >&2; return 1; }
}

# api_stop: SIGTERM; isergw-api must exit 0 with no sanitizer report.
api_stop() {
	local rc
	_lib_forget "$API_PID"
	kill -TERM "$API_PID" 2>/dev/null
	wait "$API_PID"
	rc=$?
	if [ "$rc" -ne 0 ]; then
		log "isergw-api exited with status $rc after SIGTERM (expected 0)"
		tail -n 20 "$API_LOG" >&2
		return 1
	fi
	if sanitizer_report "$API_LOG" >&2; then
		log "sanitizer report in $API_LOG"
		return 1
	fi
	return 0
}

# http METHOD PATH OUT [CURL ARGS...]: the status code on stdout, the body in
# OUT, the headers in OUT.hdr.
http() {
	local method=$1 path=$2 out=$3
	shift 3
	curl -sS -X "$method" -o "$out" -D "$out.hdr" -w '%{http_code}' --max-time 10 "$@" \
		"$API_URL$path"
}

# metric FILE 'NAME{LABELS}': the value of that exact sample in a scrape
# ("" when there is none).
metric() {
	awk -v k="$2" '$1 == k { print $2; exit }' "$1"
}

# promtool_clean FILE: promtool check metrics finds nothing to say.
promtool_clean() {
	local out rc=0
	out=$(promtool check metrics <"$1" 2>&1) || rc=$?
	if [ "$rc" -ne 0 ] || [ -n "$out" ]; then
		log "promtool check metrics on $1:"
		printf '%s\n' "$out" | head -n 20 >&2
		return 1
	fi
	return 0
}
