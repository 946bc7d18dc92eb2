#!/usr/bin/env bash
# bench/http.sh - HTTP throughput and latency of the whole stack.
#
# Starts the `bench` instance (https://127.0.0.1:$SLUICE_PORT, default 28443; workers = 2), then
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
# shellcheck source=bench/lib/wrk.sh
. "$ROOT/bench/lib/wrk.sh"
wrk_settings

export SLUICE_INSTANCE=bench
DEV=$ROOT/scripts/dev
URL=https://127.0.0.1:${SLUICE_PORT:-28443}
STATIC=$URL/_bench/static
HEALTH=$URL/health
BARE=$URL/_test/pid
VAR=$ROOT/var/bench
RESULTS=$ROOT/bench/results
OUT=$RESULTS/http-$(date -u +%Y%m%d-%H%M%S).txt
TMP=$(mktemp -d)

command -v wrk >/dev/null 2>&1 || "$DEV" deps
# shellcheck source=bench/lib/instance.sh
. "$ROOT/bench/lib/instance.sh"
bench_instance_up bench/http.sh

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

	wrk_rounds 18 '(a) /_bench/static' "$STATIC" '(b) /health' "$HEALTH" \
		'(c) /_test/pid' "$BARE"
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
