#!/usr/bin/env bash
# bench/auth.sh - what a flood of wrong Basic passwords costs the service.
#
# Starts the `bench` instance (workers = 2; its nginx does not rate-limit
# 127.0.0.1, so the flood reaches sluice), adds a Basic user with the default
# 600000 PBKDF2 iterations, then in each round measures GET /health (wrk, one
# connection, --latency) three ways:
#   idle       nothing else running
#   open       while FLOOD_CONNECTIONS clients send wrong passwords for that
#              user to /_test/basic, the throttle's budgets set out of reach
#              (basic_fail_per_user = basic_fail_per_address = 1000000): every
#              attempt costs a PBKDF2, as before the throttle
#   throttled  the same flood with the shipped budgets (10 per name, 50 per
#              address): past them each attempt is a 429
# and prints /health p50 and p99 per round, the flood's requests/s and the
# time serve spent on each kind of answer (the median `ms` of the request log
# lines: 401 = a PBKDF2 check, 429 = the throttle), with medians over the
# rounds and their ratios.  Results go to bench/results/auth-<date>.txt; the
# instance is stopped at the end.
#
# Environment: SLUICE_PORT (the bench instance's https port, default 28443),
# ROUNDS (3), DURATION (15, seconds), FLOOD_CONNECTIONS (6).
set -euo pipefail

ROOT=$(dirname "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")")
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-15}
FLOOD_CONNECTIONS=${FLOOD_CONNECTIONS:-6}
[[ $ROUNDS =~ ^[1-9][0-9]*$ && $DURATION =~ ^[1-9][0-9]*$ ]] ||
	{ echo "ROUNDS and DURATION must be positive numbers" >&2; exit 2; }

export SLUICE_INSTANCE=bench
DEV=$ROOT/scripts/dev
RESULTS=$ROOT/bench/results
OUT=$RESULTS/auth-$(date -u +%Y%m%d-%H%M%S).txt
TMP=$(mktemp -d)
THREADS=1
CONNECTIONS=1

. "$ROOT/bench/lib/instance.sh"
bench_instance_up bench/auth.sh
. "$ROOT/bench/lib/wrk.sh"

USER_NAME=bench_auth_$$
printf 'the-right-password\n' | "$SLUICE_BIN" user add "$USER_NAME" -c "$SLUICE_CONF" >/dev/null
WRONG="Authorization: Basic $(printf '%s:wrong' "$USER_NAME" | base64 -w0)"
ORIG_CONF=$TMP/sluice.conf.orig
cp -p "$SLUICE_CONF" "$ORIG_CONF"

# Set the throttle budgets (or put the shipped config back) and reload serve.
budgets() {
	cp -p "$ORIG_CONF" "$SLUICE_CONF"
	if [[ $1 == open ]]; then
		printf 'basic_fail_per_user = 1000000\nbasic_fail_per_address = 1000000\n' >>"$SLUICE_CONF"
	fi
	local before
	before=$(grep -c 'msg=reloaded' "$SLUICE_SERVE_LOG" || true)
	kill -HUP "$(cat "$SLUICE_SERVE_PID")"
	# Reloaded, and the old workers gone (their CPU time would go with them).
	for _ in $(seq 1 200); do
		if (($(grep -c 'msg=reloaded' "$SLUICE_SERVE_LOG" || true) > before)) &&
			(($(pgrep -P "$(cat "$SLUICE_SERVE_PID")" | wc -l) == 2)); then
			return 0
		fi
		sleep 0.1
	done
	echo "bench/auth.sh: serve did not reload" >&2
	exit 1
}

# CPU time (clock ticks, user + system) the serve workers have used.
workers_ticks() {
	local t=0 pid
	for pid in $(pgrep -P "$(cat "$SLUICE_SERVE_PID")"); do
		t=$((t + $(awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$pid/stat" 2>/dev/null || echo 0)))
	done
	echo "$t"
}

# /health under the given condition: "p50_ms p99_ms flood_req_s ms401 n401
# ms429 n429 cpu_us_per_flood_request".
measure() {
	local kind=$1 log_from flood_pid= ticks0 ticks1
	budgets "$kind"
	log_from=$(stat -c %s "$SLUICE_SERVE_LOG")
	ticks0=$(workers_ticks)
	if [[ $kind != idle ]]; then
		wrk -t2 -c"$FLOOD_CONNECTIONS" -d"$((DURATION + 4))s" -H "$WRONG" \
			"$SLUICE_URL/_test/basic" >"$TMP/flood.out" 2>&1 &
		flood_pid=$!
		sleep 2    # the flood under way before /health is timed
	fi
	wrk -t1 -c1 -d"${DURATION}s" --latency "$SLUICE_URL/health" >"$TMP/health.out" 2>&1
	[[ -n $flood_pid ]] && wait "$flood_pid"
	ticks1=$(workers_ticks)
	local p50 p99 frps=0
	p50=$(to_ms "$(awk '$1 == "50%" { print $2 }' "$TMP/health.out")")
	p99=$(to_ms "$(awk '$1 == "99%" { print $2 }' "$TMP/health.out")")
	[[ -n $flood_pid ]] && frps=$(awk '/^Requests\/sec:/ { print $2 }' "$TMP/flood.out")
	tail -c +"$((log_from + 1))" "$SLUICE_SERVE_LOG" | grep 'path=/_test/basic' >"$TMP/lines" || true
	local m401 m429
	m401=$(awk '/status=401/ { for (i = 1; i <= NF; i++) if ($i ~ /^ms=/) print substr($i, 4) }' "$TMP/lines")
	m429=$(awk '/status=429/ { for (i = 1; i <= NF; i++) if ($i ~ /^ms=/) print substr($i, 4) }' "$TMP/lines")
	local n401 n429 cpu=-
	n401=$(printf '%s\n' $m401 | grep -c . || true)
	n429=$(printf '%s\n' $m429 | grep -c . || true)
	(( n401 + n429 > 0 )) && cpu=$(awk -v t=$((ticks1 - ticks0)) -v hz="$(getconf CLK_TCK)" \
		-v n=$((n401 + n429)) 'BEGIN { printf "%.1f", t / hz * 1e6 / n }')
	printf '%s %s %s %s %s %s %s %s\n' "$p50" "$p99" "${frps:-0}" \
		"$( [[ -n $m401 ]] && median $m401 || echo -)" "$n401" \
		"$( [[ -n $m429 ]] && median $m429 || echo -)" "$n429" "$cpu"
}

report() {
	printf 'sluice Basic brute-force benchmark, %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
	printf 'machine: %s CPUs, %s, load average %s; %s\n' "$(nproc)" "$(uname -r)" \
		"$(cut -d' ' -f1-3 /proc/loadavg)" "$("$SLUICE_BIN" version 2>/dev/null || echo sluice)"
	printf 'GET /health: wrk -t1 -c1 -d%ss --latency; flood: wrk -t2 -c%s of wrong passwords ' \
		"$DURATION" "$FLOOD_CONNECTIONS"
	printf 'to /_test/basic (PBKDF2 600000 iterations); serve workers = 2; %s rounds\n\n' "$ROUNDS"
	printf '%-5s %-9s %10s %10s %10s %14s %14s %14s\n' round case 'p50 ms' 'p99 ms' 'flood r/s' \
		'401 ms (n)' '429 ms (n)' 'CPU us/attempt'
	declare -A p50 p99 f401 f429 frps fcpu
	for ((r = 1; r <= ROUNDS; r++)); do
		for kind in idle open throttled; do
			read -r a b c d e f g h < <(measure "$kind")
			printf '%-5s %-9s %10s %10s %10s %14s %14s %14s\n' "$r" "$kind" "$a" "$b" "$c" \
				"$d ($e)" "$f ($g)" "$h"
			p50[$kind]+="$a " p99[$kind]+="$b " frps[$kind]+="$c "
			[[ $d != - ]] && f401[$kind]+="$d "
			[[ $f != - ]] && f429[$kind]+="$f "
			[[ $h != - ]] && fcpu[$kind]+="$h "
		done
	done
	budgets throttled
	echo
	for kind in idle open throttled; do
		printf 'median %-9s /health p50 %s ms, p99 %s ms; flood %s req/s\n' "$kind" \
			"$(median ${p50[$kind]})" "$(median ${p99[$kind]})" "$(median ${frps[$kind]})"
	done
	printf 'median time a worker spends on a wrong password (request log ms, 0.1 ms steps): '
	printf '%s ms checked (401, open), %s ms throttled (429)\n' \
		"$(median ${f401[open]:-0})" "$(median ${f429[throttled]:-0})"
	printf 'median worker CPU per flood attempt (all workers, FastCGI included): '
	printf '%s us open, %s us throttled\n' "$(median ${fcpu[open]:-0})" "$(median ${fcpu[throttled]:-0})"
	printf 'ratios: /health p50 open / idle %s, throttled / idle %s; CPU per attempt open / throttled %s\n' \
		"$(ratio "$(median ${p50[open]})" "$(median ${p50[idle]})")" \
		"$(ratio "$(median ${p50[throttled]})" "$(median ${p50[idle]})")" \
		"$(ratio "$(median ${fcpu[open]:-0})" "$(median ${fcpu[throttled]:-1})")"
}

mkdir -p "$RESULTS"
report | tee "$OUT"
sh -c "$SLUICE_MYSQL -e \"DELETE FROM api_users WHERE name = '$USER_NAME'\""
echo "results: $OUT"
