#!/usr/bin/env bash
# bench/platform.sh - the platform reads under load, beside the static
# nginx baseline.
#
# Starts the `bench` instance (https://127.0.0.1:28443, or SLUICE_PORT;
# workers = 2), seeds one customer with PIPELINES pipelines of JOBS jobs
# each through POST /platform/pipeline, then alternates wrk runs against
#   (a) /_bench/static             nginx answering by itself: the ceiling
#   (b) GET /platform/pipelines    the customer's whole list with all jobs
#   (c) GET /platform/pipeline/ID  one pipeline with its jobs and tasks
# and prints req/s and p99 per round, the medians, the ratios b/a and c/a of
# the median req/s, and the response sizes.  The output is also saved to
# bench/results/platform-<date>.txt.  The instance is stopped at the end.
#
# Environment: ROUNDS (3), DURATION (10s), CONNECTIONS (32), THREADS (2),
# WARMUP (3s), PIPELINES (100), JOBS (3), SLUICE_PORT (28443).
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

PIPELINES=${PIPELINES:-100}
JOBS=${JOBS:-3}
[[ $PIPELINES =~ ^[1-9][0-9]*$ && $JOBS =~ ^[1-9][0-9]*$ ]] ||
	{ echo "PIPELINES and JOBS must be positive numbers" >&2; exit 2; }

export SLUICE_INSTANCE=bench
export SLUICE_PORT=${SLUICE_PORT:-28443}
DEV=$ROOT/scripts/dev
URL=https://127.0.0.1:$SLUICE_PORT
STATIC=$URL/_bench/static
LIST=$URL/platform/pipelines
RESULTS=$ROOT/bench/results
OUT=$RESULTS/platform-$(date -u +%Y%m%d-%H%M%S).txt
TMP=$(mktemp -d)

command -v wrk >/dev/null 2>&1 || "$DEV" deps
# shellcheck source=bench/lib/instance.sh
. "$ROOT/bench/lib/instance.sh"
bench_instance_up bench/platform.sh

. "$ROOT/bench/lib/wrk.sh"
# Every run sends the token, the static one too (nginx ignores it there), so
# all three carry the same request headers.

# The customer: its own, so the list holds exactly what was seeded.
seed() {
	local body i j jobs
	TOKEN=$("$SLUICE_BIN" token -c "$SLUICE_CONF" --customer demo --sub bench@example.com \
		--permissions PLATFORM.READ,PLATFORM.WRITE) || { echo "sluice token failed" >&2; exit 1; }
	# A fresh instance has no pipelines; a reused one is emptied first.
	eval "$SLUICE_MYSQL" -e "\"DELETE FROM pipelines WHERE customer_id = '$SLUICE_DEMO_CUSTOMER_ID'\"" ||
		{ echo "bench/platform.sh: cannot empty the customer's pipelines" >&2; exit 1; }
	for ((i = 0; i < PIPELINES; i++)); do
		jobs=
		for ((j = 0; j < JOBS; j++)); do
			jobs+="${jobs:+,}{\"input\":{\"connector\":\"jdbc\",\"plugin\":\"postgres\",
				\"table_name\":\"public.orders_$j\",\"load_type\":\"incremental\",
				\"incremental_column_name\":\"updated_at\",
				\"incremental_column_type\":\"timestamp with time zone\",
				\"column_include_list\":[\"id\",\"customer_id\",\"amount\",\"updated_at\"]},
				\"output\":{\"plugin\":\"mariadb\",\"raw\":{\"table_name\":\"orders_$j\",
				\"table_schema\":\"raw\"}},\"memory_allocated_mb\":4096}"
		done
		body="{\"name\":\"bench $i\",\"description\":\"seeded by bench/platform.sh\",
			\"cron\":\"$((i % 60)) 2 * * *\",\"jobs\":[$jobs]}"
		curl -skf -o "$TMP/created.json" -H "Authorization: Bearer $TOKEN" \
			-H 'Content-Type: application/json' --data-binary "$body" "$URL/platform/pipeline" ||
			{ echo "bench/platform.sh: creating pipeline $i failed" >&2; exit 1; }
	done
	PIPELINE_ID=$(sed -n 's/^{"id":[0-9]*,"pipeline_id":"\([0-9a-f_]*\)".*/\1/p' "$TMP/created.json")
	[[ -n $PIPELINE_ID ]] || { echo "bench/platform.sh: no pipeline_id in the create answer" >&2; exit 1; }
	DETAIL=$URL/platform/pipeline/$PIPELINE_ID
}

size_of() {
	curl -sk -o /dev/null -w '%{http_code} %{size_download}' -H "Authorization: Bearer $TOKEN" "$1"
}

report() {
	local list_size detail_size
	read -r code list_size <<<"$(size_of "$LIST")"
	[[ $code == 200 ]] || { echo "bench/platform.sh: $LIST answers $code, not 200" >&2; exit 1; }
	read -r code detail_size <<<"$(size_of "$DETAIL")"
	[[ $code == 200 ]] || { echo "bench/platform.sh: $DETAIL answers $code, not 200" >&2; exit 1; }

	printf 'sluice platform benchmark, %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
	printf 'machine: %s CPUs, %s; %s; %s\n' "$(nproc)" "$(uname -r)" \
		"$(nginx -v 2>&1 | sed 's/^nginx version: //')" \
		"$("$SLUICE_BIN" version 2>/dev/null || echo sluice)"
	printf 'wrk -t%s -c%s -d%s --latency, %s rounds, sluice workers = 2, TLS on one keep-alive connection each\n' \
		"$THREADS" "$CONNECTIONS" "$DURATION" "$ROUNDS"
	printf 'data: one customer, %s pipelines x %s jobs (seeded through POST /platform/pipeline)\n' \
		"$PIPELINES" "$JOBS"
	printf '(a) %s\n(b) %s  (%s bytes)\n(c) %s  (%s bytes)\n\n' "$STATIC" "$LIST" "$list_size" \
		"$DETAIL" "$detail_size"

	wrk_rounds 26 '(a) /_bench/static' "$STATIC" '(b) GET /platform/pipelines' "$LIST" \
		'(c) GET /platform/pipeline/ID' "$DETAIL" -H "Authorization: Bearer $TOKEN"
	printf '  ratio b/a of median req/s: %s   (target >= 0.25)\n' "$(ratio "$bm" "$am")"
	printf '  ratio c/a of median req/s: %s   (target >= 0.40)\n' "$(ratio "$cm" "$am")"
}

echo "seeding $PIPELINES pipelines x $JOBS jobs..."
seed
mkdir -p "$RESULTS"
report 2>&1 | tee "$OUT"
printf '\nsaved to %s\n' "${OUT#"$ROOT"/}"
