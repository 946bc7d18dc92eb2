#!/usr/bin/env bash
# bench/keep_conn.sh - FastCGI connections kept open between requests against
# one connection per request, in one run on the bench instance.
#
# Starts the `bench` instance (workers = 2, or WORKERS), seeds one pipeline of
# three jobs, then alternates ROUNDS times the two nginx sites: `off`, the
# site before (fastcgi_keep_conn off: nginx connects for every request) and
# `on`, the site now (fastcgi_keep_conn on, upstream keepalive 32), reloading
# nginx between them.  In each, wrk runs against
#   (a) /_bench/static             nginx answering by itself: the ceiling
#   (b) /_test/pid                 a FastCGI route that does nothing
#   (c) /health                    a worker, and MariaDB's ping when not cached
#   (d) GET /platform/pipeline/ID  one pipeline with its jobs
# and prints req/s, p99 and errors per round, then per site the medians and
# their ratios to (a) of the same rounds.  Last, once per site, the
# slow-client mix of bench/serve_pool.sh (d): /health latency alone, then
# beside 2 x workers (or MIX_CLIENTS) slow uploads, long polls and
# wrong-password clients.
# The output is saved to bench/results/keep-conn-<date>.txt; the instance is
# stopped at the end.
#
# Environment: ROUNDS (3), DURATION (10s), CONNECTIONS (32), THREADS (2),
# WARMUP (3s), WORKERS (the instance's 2), KEEPALIVE (the upstream's
# keepalive: connections each of nginx's 2 processes keeps; default WORKERS
# / 2, at least 1, as scripts/dev renders it), MIX (1; 0 skips the
# slow-client mix), MIX_CLIENTS (2 x WORKERS: clients of each kind in the
# mix, so that two pools can be compared under the same mix), SLUICE_PORT
# (28443).
set -euo pipefail

ROOT=$(dirname "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")")
# shellcheck source=bench/lib/wrk.sh
. "$ROOT/bench/lib/wrk.sh"
wrk_settings
MIX=${MIX:-1}
[[ -z ${WORKERS:-} || $WORKERS =~ ^[1-9][0-9]*$ ]] || { echo "WORKERS must be a positive number" >&2; exit 2; }

export SLUICE_INSTANCE=bench
export SLUICE_PORT=${SLUICE_PORT:-28443}
DEV=$ROOT/scripts/dev
URL=https://127.0.0.1:$SLUICE_PORT
RESULTS=$ROOT/bench/results
OUT=$RESULTS/keep-conn-$(date -u +%Y%m%d-%H%M%S).txt
TMP=$(mktemp -d)

command -v wrk >/dev/null 2>&1 || "$DEV" deps
# shellcheck source=bench/lib/instance.sh
. "$ROOT/bench/lib/instance.sh"
bench_instance_up bench/keep_conn.sh
bench_platform_client

NGINX_CONF=$SLUICE_VAR/nginx/nginx.conf

KEEPALIVE=${KEEPALIVE:-$(( ${WORKERS:-2} / 2 > 0 ? ${WORKERS:-2} / 2 : 1 ))}
[[ $KEEPALIVE =~ ^[1-9][0-9]*$ ]] || { echo "KEEPALIVE must be a positive number" >&2; exit 2; }

# site off|on: render the instance's nginx site with fastcgi_keep_conn so
# (and the upstream's keepalive KEEPALIVE) and reload nginx; its old
# processes finish what they hold.
site() {
	sed -i -E -e "s/fastcgi_keep_conn (on|off);/fastcgi_keep_conn $1;/" \
		-e "s/(upstream sluice_local \{ server [^;]*; keepalive )[0-9]+;/\1$KEEPALIVE;/" "$NGINX_CONF"
	grep -q "keepalive $KEEPALIVE; }" "$NGINX_CONF" ||
		{ echo "bench/keep_conn.sh: no upstream keepalive in $NGINX_CONF" >&2; exit 1; }
	nginx -p "$SLUICE_VAR/nginx/" -c "$NGINX_CONF" -e "$SLUICE_VAR/log/nginx-error.log" -s reload
	sleep 2
	[[ $(curl -sk -o /dev/null -w '%{http_code}' "$URL/health") == 200 ]] ||
		{ echo "bench/keep_conn.sh: /health is not 200 after the reload" >&2; exit 1; }
}

set_workers() {
	local master old
	master=$(head -n1 "$SLUICE_VAR/run/serve.pid")
	old=$(pgrep -P "$master" | sort | tr '\n' ' ')
	sed -i -E '/^\s*workers\s*=/d' "$SLUICE_CONF"
	printf 'workers = %s\n' "$1" >>"$SLUICE_CONF"
	kill -HUP "$master"
	for _ in $(seq 60); do
		sleep 0.5
		# the new workers and the waiter, none of the old ones
		local now
		now=$(pgrep -P "$master" | sort | tr '\n' ' ')
		if [[ $(wc -w <<<"$now") -ge $(($1 + 1)) ]] &&
			! grep -qwFf <(tr ' ' '\n' <<<"$old" | sed '/^$/d') <<<"$now"; then
			return 0
		fi
	done
	echo "bench/keep_conn.sh: the workers did not come up after HUP" >&2
	exit 1
}

report() {
	local id mode r res rps p99 err t
	declare -A sum_rps sum_p99
	printf 'sluice FastCGI keep-alive benchmark, %s, load average %s\n' \
		"$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$(cut -d' ' -f1-3 /proc/loadavg)"
	printf 'machine: %s CPUs, %s; %s; %s\n' "$(nproc)" "$(uname -r)" \
		"$(nginx -v 2>&1 | sed 's/^nginx version: //')" \
		"$("$SLUICE_BIN" version 2>/dev/null || echo sluice)"
	printf 'command: ROUNDS=%s DURATION=%s CONNECTIONS=%s WORKERS=%s KEEPALIVE=%s MIX=%s%s SLUICE_PORT=%s bench/keep_conn.sh\n' \
		"$ROUNDS" "$DURATION" "$CONNECTIONS" "${WORKERS:-2}" "$KEEPALIVE" "$MIX" \
		"${MIX_CLIENTS:+ MIX_CLIENTS=$MIX_CLIENTS}" "$SLUICE_PORT"
	[[ -n ${WORKERS:-} ]] && set_workers "$WORKERS"
	printf 'wrk -t%s -c%s -d%s --latency; sluice workers = %s; nginx worker_processes 2, upstream keepalive %s\n\n' \
		"$THREADS" "$CONNECTIONS" "$DURATION" "${WORKERS:-2}" "$KEEPALIVE"

	# one pipeline of three jobs, as bench/platform.sh seeds them
	id=$(api POST /platform/pipeline "{\"name\":\"keep-conn $$\",\"cron\":\"0 2 * * *\",\"jobs\":$(bench_pipeline_jobs 3)}" |
		jget pipeline_id) || { echo "bench/keep_conn.sh: creating the pipeline failed" >&2; exit 1; }
	local -a names=(a b c d)
	local -A path=([a]=/_bench/static [b]=/_test/pid [c]=/health [d]=/platform/pipeline/$id)
	printf 'targets: (a) %s  (b) %s  (c) %s  (d) %s\n' "${path[a]}" "${path[b]}" "${path[c]}" "${path[d]}"
	[[ $(curl -sk -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $TOKEN" "$URL${path[d]}") == 200 ]] ||
		{ echo "bench/keep_conn.sh: GET ${path[d]} is not 200" >&2; exit 1; }

	echo "warming up ($WARMUP each, both sites)..."
	for mode in off on; do
		site "$mode"
		for t in "${names[@]}"; do
			if [[ $t == d ]]; then
				run_wrk "$URL${path[$t]}" "$WARMUP" -H "Authorization: Bearer $TOKEN" >/dev/null
			else
				run_wrk "$URL${path[$t]}" "$WARMUP" >/dev/null
			fi
		done
	done
	for ((r = 1; r <= ROUNDS; r++)); do
		for mode in off on; do
			site "$mode"
			printf '\nround %d, fastcgi_keep_conn %s\n' "$r" "$mode"
			printf '  %-34s %12s %10s %8s\n' target 'req/s' 'p99 ms' errors
			for t in "${names[@]}"; do
				if [[ $t == d ]]; then
					res=$(run_wrk "$URL${path[$t]}" "$DURATION" -H "Authorization: Bearer $TOKEN")
				else
					res=$(run_wrk "$URL${path[$t]}" "$DURATION")
				fi
				read -r rps p99 err <<<"$res"
				sum_rps[$mode.$t]+="$rps "
				sum_p99[$mode.$t]+="$p99 "
				printf '  (%s) %-30s %12.2f %10.3f %8d\n' "$t" "${path[$t]}" "$rps" "$p99" "$err"
			done
		done
	done
	for mode in off on; do
		printf '\nmedians over %d rounds, fastcgi_keep_conn %s\n' "$ROUNDS" "$mode"
		printf '  %-34s %12s %10s %14s\n' target 'req/s' 'p99 ms' 'ratio to (a)'
		local am
		# shellcheck disable=SC2086
		am=$(median ${sum_rps[$mode.a]})
		for t in "${names[@]}"; do
			local m
			# shellcheck disable=SC2086
			m=$(median ${sum_rps[$mode.$t]})
			# shellcheck disable=SC2086
			printf '  (%s) %-30s %12s %10s %14s\n' "$t" "${path[$t]}" "$m" \
				"$(median ${sum_p99[$mode.$t]})" "$(ratio "$m" "$am")"
		done
	done
	if [[ $MIX != 0 ]]; then
		for mode in off on; do
			site "$mode"
			printf '\nslow-client mix, fastcgi_keep_conn %s\n' "$mode"
			REQUESTS=0 UPLOAD_MIB=0 SIZES='' perl -I"$ROOT/t/lib" "$ROOT/bench/serve_pool.pl" |
				grep -E '^(alone|with)[: ]'
		done
	fi
}

mkdir -p "$RESULTS"
report 2>&1 | tee "$OUT"
printf '\nsaved to %s\n' "${OUT#"$ROOT"/}"
