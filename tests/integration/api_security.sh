#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# isergw-api's security layer (docs/api.md, Security) against a real isergwd:
#   - `isergw-api token add|list|remove`: a 0600 file, the secret printed once
#     and stored nowhere; bad usage exits 2, a duplicate name 1;
#   - start refused (exit 78, EX_CONFIG, the reason named) for a token file
#     others can read, one with a malformed line (its number), a missing TLS
#     file (its path); --tls-cert without --tls-key exits 78 too;
#   - no token: 401 with WWW-Authenticate: Bearer realm="isergw"; a wrong
#     token 401 with error="invalid_token"; /healthz and /readyz open;
#     /metrics 401 without a token, 200 with the read-only one; other paths
#     fail closed (/nope 401 without a token, 404 with one; //api/v1 403 for
#     the read-only token on a POST);
#   - the read-only token on a POST under /api/v1: 403. The guard decides
#     before routing, so this holds whether or not the route exists yet; the
#     admin token passes the guard (404/405 from routing in a tree without
#     the REST routes, else the route's answer) and the write is logged with
#     the token's name;
#   - a body over 1 MiB: 413 (Content-Length at once; chunked once it ends),
#     1 MiB exactly is accepted;
#   - 100 slowloris clients, each from its own 127.0.0.X and sending a
#     header byte every 2 s past the 5 s idle timeout, and meanwhile a normal
#     client's GET /healthz answers (curl --max-time 10); 33 connections from
#     one address, each answered once and idle: the 33rd is answered, the
#     oldest of them closed (32 per address);
#   - SIGHUP re-reads the token file: a removed token is refused, a new one
#     accepted;
#   - TLS with a test CA (openssl): curl --cacert with TLS 1.2 and 1.3;
#     TLS 1.1 (offered by the client) refused; plain HTTP to the TLS port gets
#     no answer; no --cacert: the certificate is not trusted; --metrics-open;
#   - without --token-file: a notice at start, /api/v1 401, /metrics open;
#   - no token secret in any response body or header or any log line;
#   - SIGTERM: exit 0 (in the ASan tree: no sanitizer report).
#
#   api_security.sh --api PATH [--daemon PATH] [--scratch DIR] [--addr A]
#                   [--port P] [--http-port H] [--tls-port T]
#   SLOW_MAX_CONN=N: --max-connections of the slowloris run (default 128;
#   100 or less must make the slowloris check fail)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/integration/lib.sh
. "$here/lib.sh"
# shellcheck source=tests/integration/config_lib.sh
. "$here/config_lib.sh"
# shellcheck source=tests/integration/api_lib.sh
. "$here/api_lib.sh"

API=
ADDR=127.0.0.122
PORT=13540
HTTP_PORT=13541
TLS_PORT=13542
lib_parse_common "$@"
set -- "${LIB_ARGS[@]}"
while [ $# -gt 0 ]; do
	case "$1" in
	--api) API=$2; shift 2 ;;
	--addr) ADDR=$2; shift 2 ;;
	--port) PORT=$2; shift 2 ;;
	--http-port) HTTP_PORT=$2; shift 2 ;;
	--tls-port) TLS_PORT=$2; shift 2 ;;
	-h|--help) sed -n '3,38p' "$0"; exit 0 ;;
	*) die "unknown option $1" ;;
	esac
done
[ -x "${API:-/nonexistent}" ] || die "--api PATH (isergw-api) is required"
only_isergw "isergw-api"
need_tool curl curl
need_tool jq jq
need_tool openssl openssl
need_tool python3 python3

IQN=iqn.2026-11.org.isergw:apisec
rm -rf "$SCRATCH"/*.out "$SCRATCH"/*.hdr "$SCRATCH"/*.log "$SCRATCH"/tls "$SCRATCH"/tokens* \
	"$SCRATCH"/*.tok "$SCRATCH"/*.bin
FAILS=0
PASSES=0
ok() { PASSES=$((PASSES + 1)); log "PASS $*"; }
bad() { FAILS=$((FAILS + 1)); log "FAIL $*"; }
# expect DESC ACTUAL WANTED
expect() { if [ "$2" = "$3" ]; then ok "$1 ($2)"; else bad "$1: got '$2', want '$3'"; fi; }
# header FILE.hdr NAME: that header's value
header() { tr -d '\r' <"$1" | awk -v h="$(echo "$2" | tr 'A-Z' 'a-z')" -F': ' 'tolower($1) == h { sub(/^[^:]*: /, ""); print; exit }'; }
# problem FILE: [title, status] of a problem document, or what it is
problem() { jq -c '[.title, .status]' "$1" 2>/dev/null || echo "not JSON: $(head -c 200 "$1")"; }
is_problem() {
	local t
	t=$(header "$1.hdr" Content-Type)
	if [ "$t" = application/problem+json ]; then ok "$2 is application/problem+json"; else bad "$2 content type '$t'"; fi
}

TF=$SCRATCH/tokens
# ---- the command line and the token file
if "$API" --help >"$SCRATCH/help.out" 2>&1; then ok "--help exits 0"; else bad "--help exit status"; fi
for o in --token-file --metrics-open --tls-cert --tls-key "token add" "token list" "token remove"; do
	grep -q -- "$o" "$SCRATCH/help.out" && ok "--help describes $o" || bad "--help does not describe $o"
done
"$API" token --help >"$SCRATCH/tokhelp.out" 2>&1
expect "token --help" "$?" 0
"$API" token add --token-file "$TF" --name ops --role admin >"$SCRATCH/ops.tok" 2>"$SCRATCH/add.out"
expect "token add ops admin" "$?" 0
"$API" token add --token-file "$TF" --name prom --role read-only >"$SCRATCH/prom.tok" 2>>"$SCRATCH/add.out"
expect "token add prom read-only" "$?" 0
OPS=$(cat "$SCRATCH/ops.tok")
PROM=$(cat "$SCRATCH/prom.tok")
log "made tokens ops (${OPS:0:11}...) and prom (${PROM:0:12}...)"
expect "the admin token's form" "$(echo "$OPS" | grep -cE '^isergw_ops_[A-Za-z0-9_-]{43}$')" 1
expect "the read-only token's form" "$(echo "$PROM" | grep -cE '^isergw_prom_[A-Za-z0-9_-]{43}$')" 1
expect "token file mode" "$(stat -c %a "$TF")" 600
expect "token list" "$("$API" token list --token-file "$TF" | tr '\n' ,)" "ops admin,prom read-only,"
"$API" token add --token-file "$TF" --name ops --role admin >"$SCRATCH/dup.out" 2>&1
expect "token add of an existing name" "$?" 1
"$API" token add --token-file "$TF" --name x --role root >/dev/null 2>&1
expect "token add --role root" "$?" 2
"$API" token add --token-file "$TF" --name "a b" --role admin >/dev/null 2>&1
expect "token add of a bad name" "$?" 1
"$API" token remove --token-file "$TF" --name nosuch >/dev/null 2>&1
expect "token remove of an unknown name" "$?" 1
# every secret this script holds (whole tokens and their secret parts)
SECRETS=("$OPS" "$PROM" "${OPS: -43}" "${PROM: -43}")
WHOSE=("ops's token" "prom's token" "ops's secret" "prom's secret")    # what a failure may print

# ---- refusals at start
cp "$TF" "$TF.open" && chmod 644 "$TF.open"
"$API" --listen "$ADDR:$HTTP_PORT" --token-file "$TF.open" >"$SCRATCH/open.out" 2>&1
expect "a token file others can read: exit" "$?" 78
if grep -q "mode 0644 lets others read or write it" "$SCRATCH/open.out"; then ok "its reason"; else bad "reason: $(cat "$SCRATCH/open.out")"; fi
{ echo "# ok"; echo "ops admin sha256:zz"; } >"$TF.bad" && chmod 600 "$TF.bad"
"$API" --listen "$ADDR:$HTTP_PORT" --token-file "$TF.bad" >"$SCRATCH/bad.out" 2>&1
expect "a malformed token file: exit" "$?" 78
if grep -q "$TF.bad: line 2: " "$SCRATCH/bad.out"; then ok "its line number"; else bad "reason: $(cat "$SCRATCH/bad.out")"; fi
"$API" --listen "$ADDR:$HTTP_PORT" --token-file "$SCRATCH/nosuch" >"$SCRATCH/nf.out" 2>&1
expect "a missing token file: exit" "$?" 78
"$API" --listen "$ADDR:$HTTP_PORT" --tls-cert "$SCRATCH/nosuch.pem" --tls-key "$SCRATCH/nosuch.key" \
	>"$SCRATCH/nocert.out" 2>&1
expect "a missing --tls-cert: exit" "$?" 78
if grep -q "$SCRATCH/nosuch.pem" "$SCRATCH/nocert.out"; then ok "its path"; else bad "reason: $(cat "$SCRATCH/nocert.out")"; fi
"$API" --listen "$ADDR:$HTTP_PORT" --tls-cert "$SCRATCH/nosuch.pem" >/dev/null 2>&1
expect "--tls-cert without --tls-key" "$?" 78

target_start isergwd "$IQN" "$SCRATCH/lun.img" 16M "$PORT" "$ADDR" || die "isergwd did not start"
SOCK=$SCRATCH/state/ctl.sock
api_start api "$ADDR:$HTTP_PORT" "$SOCK" --token-file "$TF" --idle-timeout 5 \
	--max-connections "${SLOW_MAX_CONN:-128}" || die "isergw-api did not start"
AUTH_OPS=(-H "Authorization: Bearer $OPS")
AUTH_PROM=(-H "Authorization: Bearer $PROM")

# ---- who may do what
expect "GET /healthz without a token" "$(http GET /healthz "$SCRATCH/h.out")" 200
expect "GET /readyz without a token" "$(http GET /readyz "$SCRATCH/r.out")" 200
expect "GET /api/v1/targets without a token" "$(http GET /api/v1/targets "$SCRATCH/a0.out")" 401
expect "  its WWW-Authenticate" "$(header "$SCRATCH/a0.out.hdr" WWW-Authenticate)" 'Bearer realm="isergw"'
expect "  its problem" "$(problem "$SCRATCH/a0.out")" '["Unauthorized",401]'
is_problem "$SCRATCH/a0.out" "401"
expect "POST /api/v1/targets without a token" "$(http POST /api/v1/targets "$SCRATCH/a1.out" --data '{}')" 401
WRONG="isergw_ops_${PROM: -43}"
expect "a wrong token (ops with prom's secret)" \
	"$(http GET /api/v1/targets "$SCRATCH/a2.out" -H "Authorization: Bearer $WRONG")" 401
expect "  its WWW-Authenticate" "$(header "$SCRATCH/a2.out.hdr" WWW-Authenticate)" \
	'Bearer realm="isergw", error="invalid_token"'
expect "  its problem" "$(problem "$SCRATCH/a2.out")" '["Unauthorized",401]'
expect "an unknown token name" "$(http GET /api/v1/targets "$SCRATCH/a3.out" \
	-H "Authorization: Bearer isergw_nobody_${OPS: -43}")" 401
expect "a token cut short" "$(http GET /api/v1/targets "$SCRATCH/a4.out" \
	-H "Authorization: Bearer ${OPS:0:40}")" 401
expect "Basic credentials" "$(http GET /api/v1/targets "$SCRATCH/a5.out" -u "ops:$OPS")" 401
expect "  its WWW-Authenticate" "$(header "$SCRATCH/a5.out.hdr" WWW-Authenticate)" 'Bearer realm="isergw"'
expect "GET /metrics without a token" "$(http GET /metrics "$SCRATCH/m0.out")" 401
expect "GET /metrics, read-only token" "$(http GET /metrics "$SCRATCH/m1.out" "${AUTH_PROM[@]}")" 200
if grep -q '^isergw_up 1$' "$SCRATCH/m1.out"; then ok "  a scrape with isergw_up 1"; else bad "  the scrape: $(head -c 300 "$SCRATCH/m1.out")"; fi
expect "GET /metrics, a wrong token" "$(http GET /metrics "$SCRATCH/m2.out" -H "Authorization: Bearer $WRONG")" 401
# the guard decides before routing: 403 whether or not /api/v1/targets exists yet
expect "POST /api/v1/targets, read-only token" \
	"$(http POST /api/v1/targets "$SCRATCH/w0.out" "${AUTH_PROM[@]}" -H 'Content-Type: application/json' --data '{"iqn":"x"}')" 403
expect "  its problem" "$(problem "$SCRATCH/w0.out")" '["Forbidden",403]'
is_problem "$SCRATCH/w0.out" "403"
expect "  no WWW-Authenticate on 403" "$(header "$SCRATCH/w0.out.hdr" WWW-Authenticate)" ""
expect "DELETE /api/v1/targets/x, read-only token" \
	"$(http DELETE /api/v1/targets/x "$SCRATCH/w1.out" "${AUTH_PROM[@]}")" 403
# every path but the probes and /metrics fails closed, however a router might read it
expect "GET /nope without a token" "$(http GET /nope "$SCRATCH/p0.out")" 401
expect "POST //api/v1/targets, read-only token" "$(http POST //api/v1/targets "$SCRATCH/p1.out" \
	"${AUTH_PROM[@]}" --path-as-is --data '{}')" 403
expect "GET /nope, read-only token: routing answers" "$(http GET /nope "$SCRATCH/p2.out" "${AUTH_PROM[@]}")" 404
expect "  its problem" "$(jq -c '[.type, .title, .status, .detail]' "$SCRATCH/p2.out")" \
	'["about:blank","Not Found",404,"no resource at /nope"]'
is_problem "$SCRATCH/p2.out" "404"
code=$(http GET /api/v1/targets "$SCRATCH/g0.out" "${AUTH_PROM[@]}")
case "$code" in 401|403) bad "GET /api/v1/targets, read-only token: $code" ;;
*) ok "GET /api/v1/targets, read-only token passes the guard ($code from routing)" ;; esac
code=$(http POST /api/v1/targets "$SCRATCH/w2.out" "${AUTH_OPS[@]}" -H 'Content-Type: application/json' --data '{"iqn":"x"}')
case "$code" in 401|403|413) bad "POST /api/v1/targets, admin token: $code" ;;
*) ok "POST /api/v1/targets, admin token passes the guard ($code from routing)" ;; esac
# logged when the request ends, after the answer went out: waited for
if wait_log "$API_LOG" "notice http: write by token ops: POST /api/v1/targets $code" 10; then
	ok "the write logged with the token's name"
else
	bad "no write line for ops's POST in $API_LOG"
fi
if grep -q "warn   http: refused POST /api/v1/targets from 127.0.0.1:[0-9]*: token prom is read-only" "$API_LOG"; then
	ok "the 403 logged with the token's name"
else
	bad "no line for prom's refused POST"
fi
if grep -q "write by token prom" "$API_LOG"; then bad "a refused write logged as a write"; else ok "a refused write is not logged as a write"; fi

# ---- the body cap
head -c $((2 * 1024 * 1024)) /dev/zero >"$SCRATCH/2m.bin"
head -c $((1024 * 1024)) /dev/zero >"$SCRATCH/1m.bin"
expect "POST 2 MiB with Content-Length, admin token" \
	"$(http POST /api/v1/targets "$SCRATCH/b0.out" "${AUTH_OPS[@]}" --data-binary "@$SCRATCH/2m.bin")" 413
expect "  its problem" "$(problem "$SCRATCH/b0.out")" '["Content Too Large",413]'
expect "  the connection closed" "$(header "$SCRATCH/b0.out.hdr" Connection)" close
expect "GET /healthz with 2 MiB, Content-Length" \
	"$(http GET /healthz "$SCRATCH/b1.out" --data-binary "@$SCRATCH/2m.bin" -X GET)" 413
# no route in this tree reads a POST body yet: /healthz reads (and drops) one
expect "GET /healthz with 2 MiB, chunked" "$(http GET /healthz "$SCRATCH/b2.out" -X GET \
	-H 'Transfer-Encoding: chunked' --data-binary "@$SCRATCH/2m.bin")" 413
expect "  its problem" "$(problem "$SCRATCH/b2.out")" '["Content Too Large",413]'
expect "  the connection closed" "$(header "$SCRATCH/b2.out.hdr" Connection)" close
expect "GET /healthz with 1 MiB exactly, Content-Length" \
	"$(http GET /healthz "$SCRATCH/b3.out" --data-binary "@$SCRATCH/1m.bin" -X GET)" 200
expect "GET /healthz with 1 MiB exactly, chunked" "$(http GET /healthz "$SCRATCH/b4.out" -X GET \
	-H 'Transfer-Encoding: chunked' --data-binary "@$SCRATCH/1m.bin")" 200

# ---- slowloris: 100 clients, each from its own address, a header byte every 2 s
python3 - "$ADDR" "$HTTP_PORT" "$SCRATCH/slow.ready" >"$SCRATCH/slow.out" 2>&1 <<'PY' &
import socket, sys, time
addr, port, ready = sys.argv[1], int(sys.argv[2]), sys.argv[3]
socks = []
for i in range(100):
    s = socket.socket()
    s.bind(("127.0.0.%d" % (130 + i), 0))
    s.settimeout(5)
    s.connect((addr, port))
    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
    socks.append(s)
open(ready, "w").close()
end = time.time() + 16          # past the 5 s idle timeout three times
while time.time() < end:
    time.sleep(2)
    for s in socks:
        try:
            s.sendall(b"X")     # one byte of a header that never ends
        except OSError:
            pass
alive = 0
for s in socks:
    s.setblocking(False)
    try:
        alive += s.recv(1) != b""   # b"": closed by the server
    except BlockingIOError:
        alive += 1              # open, nothing to read
    except OSError:
        pass
print("slow clients still connected after 16 s:", alive)
PY
SLOW_PID=$!
for _ in $(seq 1 100); do [ -e "$SCRATCH/slow.ready" ] && break; sleep 0.1; done
[ -e "$SCRATCH/slow.ready" ] || bad "the 100 slow clients did not connect: $(cat "$SCRATCH/slow.out")"
for i in 1 2 3 4 5; do
	sleep 2
	code=$(curl -sS -o "$SCRATCH/s$i.out" -w '%{http_code} %{time_total}' --max-time 10 "$API_URL/healthz" 2>&1)
	log "normal client during the slowloris, try $i: $code"
	expect "GET /healthz during the slowloris, try $i" "${code%% *}" 200
done
code=$(http GET /metrics "$SCRATCH/s6.out" "${AUTH_PROM[@]}")
expect "GET /metrics during the slowloris" "$code" 200
wait "$SLOW_PID"
log "$(cat "$SCRATCH/slow.out")"
expect "the slow clients held their connections (trickling beats the idle timeout)" \
	"$(sed -n 's/^slow clients still connected after 16 s: //p' "$SCRATCH/slow.out")" 100

# ---- 32 connections per address
python3 - "$ADDR" "$HTTP_PORT" >"$SCRATCH/perip.out" 2>&1 <<'PY'
import socket, sys, time
addr, port = sys.argv[1], int(sys.argv[2])
held = []
for i in range(32):
    s = socket.socket()
    s.bind(("127.0.0.240", 0))
    s.connect((addr, port))
    # answered, then idle: surely in the server's table before the 33rd comes
    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    d = b""
    while b"alive" not in d:
        d += s.recv(1000)
    held.append(s)
def ask(src):
    s = socket.socket()
    s.bind((src, 0))
    s.settimeout(5)
    try:
        s.connect((addr, port))
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        d = s.recv(100)
        return d.split(b"\r\n")[0].decode() if d else "closed"
    except OSError as e:
        return "closed (%s)" % e.__class__.__name__
    finally:
        s.close()
print("33rd from the same address:", ask("127.0.0.240"))
time.sleep(0.5)
closed = 0
for s in held:
    s.setblocking(False)
    try:
        closed += s.recv(100) == b""
    except BlockingIOError:
        pass
    except OSError:
        closed += 1
print("of the 32 held, closed:", closed)
print("another address:", ask("127.0.0.241"))
PY
log "$(tr '\n' ';' <"$SCRATCH/perip.out")"
expect "the 33rd connection from one address (answered: its oldest idle one made room)" \
	"$(sed -n 's/^33rd from the same address: //p' "$SCRATCH/perip.out")" "HTTP/1.1 200 OK"
expect "of the 32 held from that address, closed" \
	"$(sed -n 's/^of the 32 held, closed: //p' "$SCRATCH/perip.out")" 1
expect "meanwhile another address" "$(sed -n 's/^another address: //p' "$SCRATCH/perip.out")" \
	"HTTP/1.1 200 OK"

# ---- SIGHUP re-reads the token file
"$API" token remove --token-file "$TF" --name prom
expect "token remove prom" "$?" 0
"$API" token add --token-file "$TF" --name graf --role read-only >"$SCRATCH/graf.tok" 2>/dev/null
GRAF=$(cat "$SCRATCH/graf.tok")
SECRETS+=("$GRAF" "${GRAF: -43}")
WHOSE+=("graf's token" "graf's secret")
expect "before SIGHUP the removed token still works" "$(http GET /metrics "$SCRATCH/hup0.out" "${AUTH_PROM[@]}")" 200
kill -HUP "$API_PID"
# the start wrote the same line once: wait for the second
for _ in $(seq 1 100); do [ "$(grep -c "token file $TF: 2 tokens" "$API_LOG")" -ge 2 ] && break; sleep 0.1; done
expect "SIGHUP: the file read again" "$(grep -c "notice main: token file $TF: 2 tokens (1 admin, 1 read-only)" "$API_LOG")" 2
expect "after SIGHUP the removed token" "$(http GET /metrics "$SCRATCH/hup1.out" "${AUTH_PROM[@]}")" 401
expect "after SIGHUP the new token" "$(http GET /metrics "$SCRATCH/hup2.out" -H "Authorization: Bearer $GRAF")" 200
expect "after SIGHUP the admin token" "$(http GET /api/v1/x "$SCRATCH/hup3.out" "${AUTH_OPS[@]}")" 404
# a token file broken in place: the tokens read before stay
cp "$TF" "$TF.good"
echo "broken" >>"$TF"
kill -HUP "$API_PID"
for _ in $(seq 1 50); do grep -q "err    main: token file: $TF: line" "$API_LOG" && break; sleep 0.1; done
if grep -q "err    main: token file: $TF: line .*the tokens read before stay in use" "$API_LOG"; then ok "a broken file on SIGHUP: logged, old tokens kept"; else bad "no error line for the broken file"; fi
expect "  the admin token still" "$(http GET /api/v1/x "$SCRATCH/hup4.out" "${AUTH_OPS[@]}")" 404
cp "$TF.good" "$TF"

if api_stop; then ok "isergw-api: SIGTERM, exit 0"; else bad "isergw-api stop"; fi
PLAIN_LOG=$API_LOG

# ---- TLS, with a test CA
T=$SCRATCH/tls
mkdir -p "$T"
{
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$T/ca.key" \
		-out "$T/ca.pem" -days 2 -subj "/CN=isergw test CA" &&
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$T/srv.key" \
		-out "$T/srv.csr" -subj "/CN=$ADDR" &&
	printf 'subjectAltName=IP:%s\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' "$ADDR" >"$T/ext" &&
	openssl x509 -req -in "$T/srv.csr" -CA "$T/ca.pem" -CAkey "$T/ca.key" -CAcreateserial \
		-out "$T/srv.pem" -days 2 -extfile "$T/ext"
} >"$T/openssl.out" 2>&1 || die "openssl: $(cat "$T/openssl.out")"
chmod 600 "$T/srv.key"
api_start api-tls "$ADDR:$TLS_PORT" "$SOCK" --token-file "$TF" --metrics-open \
	--tls-cert "$T/srv.pem" --tls-key "$T/srv.key" || die "isergw-api (TLS) did not start"
API_URL=https://$ADDR:$TLS_PORT
# the line comes right after the port opens (api_start waits for the port)
for _ in $(seq 50); do grep -q "serving https://$ADDR:$TLS_PORT" "$API_LOG" && break; sleep 0.1; done
if grep -q "serving https://$ADDR:$TLS_PORT" "$API_LOG"; then ok "TLS: the start line says https"; else bad "TLS: start line"; fi
expect "TLS 1.2, --cacert" "$(http GET /healthz "$SCRATCH/t0.out" --cacert "$T/ca.pem" --tlsv1.2 --tls-max 1.2)" 200
expect "TLS 1.3, --cacert" "$(http GET /healthz "$SCRATCH/t1.out" --cacert "$T/ca.pem" --tlsv1.3)" 200
code=$(curl -sS -o /dev/null -w '%{http_code} %{ssl_version}' --max-time 10 --cacert "$T/ca.pem" "$API_URL/healthz" 2>/dev/null)
log "TLS: curl's default handshake: $code"
# the client offers TLS 1.0/1.1 (OpenSSL's security level 0 allows them): the server must refuse
code=$(curl -sS -o /dev/null -w '%{http_code}' --max-time 10 --cacert "$T/ca.pem" --tlsv1.0 --tls-max 1.1 \
	--ciphers 'DEFAULT@SECLEVEL=0' "$API_URL/healthz" 2>"$SCRATCH/t2.err")
log "TLS 1.1 attempt: $code, curl said: $(cat "$SCRATCH/t2.err")"
expect "TLS 1.1 refused" "$code" 000
if grep -q 'Error: .*' "$API_LOG"; then ok "  a log line from the refused handshake"; else bad "  no log line for the TLS 1.1 handshake"; fi
code=$(curl -sS -o /dev/null -w '%{http_code}' --max-time 10 "http://$ADDR:$TLS_PORT/healthz" 2>"$SCRATCH/t3.err")
log "plain HTTP to the TLS port: $code, curl said: $(cat "$SCRATCH/t3.err")"
expect "plain HTTP to the TLS port" "$code" 000
code=$(curl -sS -o /dev/null -w '%{http_code}' --max-time 10 "$API_URL/healthz" 2>"$SCRATCH/t4.err")
log "no --cacert: $code, curl said: $(cat "$SCRATCH/t4.err")"
expect "without the test CA the certificate is not trusted" "$code" 000
expect "TLS: no token on /api/v1" "$(http GET /api/v1/targets "$SCRATCH/t5.out" --cacert "$T/ca.pem")" 401
expect "TLS: read-only token on a POST" "$(http POST /api/v1/targets "$SCRATCH/t6.out" --cacert "$T/ca.pem" \
	-H "Authorization: Bearer $GRAF" --data '{}')" 403
expect "TLS: --metrics-open, /metrics without a token" "$(http GET /metrics "$SCRATCH/t7.out" --cacert "$T/ca.pem")" 200
expect "TLS: a body over the cap" "$(http POST /api/v1/targets "$SCRATCH/t8.out" --cacert "$T/ca.pem" \
	"${AUTH_OPS[@]}" --data-binary "@$SCRATCH/2m.bin")" 413
if api_stop; then ok "isergw-api (TLS): SIGTERM, exit 0"; else bad "isergw-api (TLS) stop"; fi
TLS_LOG=$API_LOG

# ---- no --token-file
api_start api-notokens "$ADDR:$HTTP_PORT" "$SOCK" || die "isergw-api (no tokens) did not start"
if grep -q "notice main: no --token-file: no tokens are configured" "$API_LOG"; then ok "no tokens: a notice at start"; else bad "no tokens: no notice"; fi
expect "no tokens: GET /api/v1/targets" "$(http GET /api/v1/targets "$SCRATCH/n0.out")" 401
expect "no tokens: GET /api/v1/targets with a token" "$(http GET /api/v1/targets "$SCRATCH/n1.out" "${AUTH_OPS[@]}")" 401
expect "no tokens: POST /api/v1/targets with a token" "$(http POST /api/v1/targets "$SCRATCH/n2.out" "${AUTH_OPS[@]}" --data '{}')" 401
expect "no tokens: /metrics open" "$(http GET /metrics "$SCRATCH/n3.out")" 200
if api_stop; then ok "isergw-api (no tokens): SIGTERM, exit 0"; else bad "isergw-api (no tokens) stop"; fi

# ---- no secret anywhere: every answer (bodies and headers) and every log line
files=("$SCRATCH"/*.out "$SCRATCH"/*.hdr "$PLAIN_LOG" "$TLS_LOG" "$API_LOG" "$T_LOG")
leaks=0
# (the *.tok files, where token add printed them, are not among the files searched)
for i in "${!SECRETS[@]}"; do
	if grep -lF -- "${SECRETS[$i]}" "${files[@]}" >"$SCRATCH/leak.txt" 2>/dev/null; then
		leaks=$((leaks + 1))
		log "${WHOSE[$i]} found in: $(tr '\n' ' ' <"$SCRATCH/leak.txt")"
	fi
done
log "searched ${#files[@]} response and log files for ${#SECRETS[@]} secrets"
expect "secrets in responses and logs" "$leaks" 0
if grep -qi 'authorization' "$PLAIN_LOG" "$TLS_LOG"; then bad "an Authorization header in a log"; else ok "no Authorization header in the logs"; fi
if grep -qF -- "$(cut -d: -f3 <"$TF" | head -n1)" "$PLAIN_LOG" "$TLS_LOG"; then bad "a token hash in a log"; else ok "no token hash in the logs"; fi

if target_stop "$T_PID" "$T_LOG"; then ok "isergwd stopped with status 0"; else bad "isergwd stop"; fi
echo "api-security: $PASSES passed, $FAILS failed"
[ "$FAILS" -eq 0 ]
