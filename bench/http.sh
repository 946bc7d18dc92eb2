#!/usr/bin/env bash
# bench/http.sh - HTTP throughput and latency of the whole stack.
#
# Starts the `bench` instance (https://127.0.0.1:28443, workers = 2), then
# alternates wrk runs against
#   (a) /_bench/static  nginx answering by itself: TLS + HTTP, the ceiling
#   (b) /health         nginx -> FastCGI -> sluice worker -> MariaDB ping
#   (c) /_test/pid      nginx -> FastCGI -> sluice worker, no database: the
#                       ceiling of any FastCGI route on this machine
# and prints req/s and p99 per round, the medians, the ratios b/a and c/a of
# the median req/s, and the memory (VmRSS) of the serve master and its workers.  The
# output is also saved to bench/results/http-<date>.txt.  The instance is
# stopped at the end.
#
# Environment: ROUNDS (3), DURATION (10s), CONNECTIONS (32), THREADS (2),
# WARMUP (3s).
set -euo pipefail

ROOT=$(dirname "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")")
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-10s}
CONNECTIONS=${CONNECTIONS:-32}
THREADS=${THREADS:-2}
WARMUP=${WARMUP:-3s}
[[ $DURATION =~ ^[0-9]+$ ]] && DURATION=${DURATION}s
[[ $WARMUP =~ ^[0-9]+$ ]] && WARMUP=${WARMUP}s
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || { echo "ROUNDS must be a positive number" >&2; exit 2; }

export SLUICE_INSTANCE=bench
DEV=$ROOT/scripts/dev
URL=https://127.0.0.1:28443
STATIC=$URL/_bench/static
HEALTH=$URL/health
BARE=$URL/_test/pid
VAR=$ROOT/var/bench
RESULTS=$ROOT/bench/results
OUT=$RESULTS/http-$(date -u +%Y%m%d-%H%M%S).txt
TMP=$(mktemp -d)

cleanup() {
	"$DEV" down bench >/dev/null 2>&1 || echo "bench/http.sh: could not stop the bench instance" >&2
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

command -v wrk >/dev/null 2>&1 || "$DEV" deps
echo "starting the bench instance..."
if ! "$DEV" up bench >"$TMP/up.log" 2>&1; then
	cat "$TMP/up.log" >&2
	echo "bench/http.sh: scripts/dev up bench failed" >&2
	exit 1
fi
eval "$("$DEV" env bench)"

. "$ROOT/bench/lib/wrk.sh"

rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo '?'; }

report() {
	code=$(curl -sk -o /dev/null -w '%{http_code}' "$HEALTH" || true)
	[[ $code == 200 ]] || { echo "bench/http.sh: $HEALTH answers $code, not 200" >&2; exit 1; }

	printf 'sluice HTTP benchmark, %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
	printf 'machine: %s CPUs, %s; %s; %s\n' "$(nproc)" "$(uname -r)" \
		"$(nginx -v 2>&1 | sed 's/^nginx version: //')" \
		"$("$SLUICE_BIN" version 2>/dev/null || echo sluice)"
	printf 'wrk -t%s -c%s -d%s --latency, %s rounds, sluice workers = 2, TLS on one keep-alive connection each\n' \
		"$THREADS" "$CONNECTIONS" "$DURATION" "$ROUNDS"
	printf '(a) %s\n(b) %s\n(c) %s\n\n' "$STATIC" "$HEALTH" "$BARE"

	echo "warming up ($WARMUP each)..."
	run_wrk "$STATIC" "$WARMUP" >/dev/null
	run_wrk "$HEALTH" "$WARMUP" >/dev/null
	run_wrk "$BARE" "$WARMUP" >/dev/null

	a_rps=() b_rps=() c_rps=() a_p99=() b_p99=() c_p99=()
	for ((r = 1; r <= ROUNDS; r++)); do
		res=$(run_wrk "$STATIC" "$DURATION")
		read -r ar ap ae <<<"$res"
		res=$(run_wrk "$HEALTH" "$DURATION")
		read -r br bp be <<<"$res"
		res=$(run_wrk "$BARE" "$DURATION")
		read -r cr cp ce <<<"$res"
		a_rps+=("$ar") a_p99+=("$ap") b_rps+=("$br") b_p99+=("$bp")
		c_rps+=("$cr") c_p99+=("$cp")
		printf '\nround %d\n' "$r"
		printf '  %-18s %12s %10s %8s\n' target 'req/s' 'p99 ms' errors
		printf '  %-18s %12.2f %10.3f %8d\n' '(a) /_bench/static' "$ar" "$ap" "$ae"
		printf '  %-18s %12.2f %10.3f %8d\n' '(b) /health' "$br" "$bp" "$be"
		printf '  %-18s %12.2f %10.3f %8d\n' '(c) /_test/pid' "$cr" "$cp" "$ce"
		if ((ae + be + ce > 0)); then
			echo "  warning: errors or non-2xx answers in this round"
		fi
	done

	am=$(median "${a_rps[@]}")
	bm=$(median "${b_rps[@]}")
	cm=$(median "${c_rps[@]}")
	printf '\nmedians over %d rounds\n' "$ROUNDS"
	printf '  %-18s %12s %10s\n' target 'req/s' 'p99 ms'
	printf '  %-18s %12s %10s\n' '(a) /_bench/static' "$am" "$(median "${a_p99[@]}")"
	printf '  %-18s %12s %10s\n' '(b) /health' "$bm" "$(median "${b_p99[@]}")"
	printf '  %-18s %12s %10s\n' '(c) /_test/pid' "$cm" "$(median "${c_p99[@]}")"
	printf '  ratio b/a of median req/s: %s\n' "$(ratio "$bm" "$am")"
	printf '  ratio c/a of median req/s: %s   (the FastCGI ceiling)\n' "$(ratio "$cm" "$am")"

	master=$(head -n1 "$VAR/run/serve.pid" 2>/dev/null || true)
	printf '\nmemory after the runs (VmRSS)\n'
	if [[ -n $master ]] && [[ -d /proc/$master ]]; then
		printf '  serve master  pid %-7s %8s kB\n' "$master" "$(rss_kb "$master")"
		for w in $(pgrep -P "$master" || true); do
			printf '  serve worker  pid %-7s %8s kB\n' "$w" "$(rss_kb "$w")"
		done
	else
		echo "  serve master not found"
	fi
}

mkdir -p "$RESULTS"
report 2>&1 | tee "$OUT"
printf '\nsaved to %s\n' "${OUT#"$ROOT"/}"
