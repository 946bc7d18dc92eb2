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
# the median req/s, and the response sizes.  When the reads carry an ETag,
# a second set of rounds repeats (a) beside
#   (d) GET /platform/pipelines    with If-None-Match: the poll, 304
#   (e) GET /platform/pipeline/ID  with If-None-Match: 304
# (one If-None-Match listing both tags, which nginx's static answer ignores).
# Then, with PEER=1, (a) and (b) beside a FastAPI peer serving the same
# JSON from the same tables behind the same nginx (bench/peer/, installed
# from Debian here when missing, never by the suite), once per variant:
#   (p) GET /_bench/peer/platform/pipelines, uvicorn (asyncio, h11)
#   (q) the same, uvicorn with uvloop and httptools (when Debian has them)
# after checking that the peer's body is byte for byte sluice's; the ratio
# b/p of the median req/s is sluice's over the peer's.  The output is also saved to
# bench/results/platform-<date>.txt.  The instance is stopped at the end.
#
# The machine is usually shared: compare ratios within one run, not req/s
# across runs.
#
# Environment: ROUNDS (3), DURATION (10s), CONNECTIONS (32), THREADS (2),
# WARMUP (3s), PIPELINES (100), JOBS (3), SLUICE_PORT (28443), PEER (1; 0:
# no peer rounds), PEER_WORKERS (2, as sluice's workers).
set -euo pipefail

ROOT=$(dirname "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")")
# shellcheck source=bench/lib/wrk.sh
. "$ROOT/bench/lib/wrk.sh"
wrk_settings

PEER=${PEER:-1}
PEER_WORKERS=${PEER_WORKERS:-2}
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
PEER_URL=$URL/_bench/peer/platform/pipelines
RESULTS=$ROOT/bench/results
OUT=$RESULTS/platform-$(date -u +%Y%m%d-%H%M%S).txt
TMP=$(mktemp -d)

command -v wrk >/dev/null 2>&1 || "$DEV" deps
# shellcheck source=bench/lib/instance.sh
. "$ROOT/bench/lib/instance.sh"
bench_instance_up bench/platform.sh
# The peer goes with the instance.
trap 'peer_stop; bench_cleanup' EXIT

# Every run sends the token, the static one too (nginx ignores it there), so
# all three carry the same request headers.

# The customer: its own, so the list holds exactly what was seeded.
seed() {
	local body i jobs
	TOKEN=$("$SLUICE_BIN" token -c "$SLUICE_CONF" --customer demo --sub bench@example.com \
		--permissions PLATFORM.READ,PLATFORM.WRITE) || { echo "sluice token failed" >&2; exit 1; }
	# A fresh instance has no pipelines; a reused one is emptied first.
	eval "$SLUICE_MYSQL" -e "\"DELETE FROM pipelines WHERE customer_id = '$SLUICE_DEMO_CUSTOMER_ID'\"" ||
		{ echo "bench/platform.sh: cannot empty the customer's pipelines" >&2; exit 1; }
	jobs=$(bench_pipeline_jobs "$JOBS")
	for ((i = 0; i < PIPELINES; i++)); do
		body="{\"name\":\"bench $i\",\"description\":\"seeded by bench/platform.sh\",
			\"cron\":\"$((i % 60)) 2 * * *\",\"jobs\":$jobs}"
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

etag_of() {
	curl -sk -o /dev/null -D - -H "Authorization: Bearer $TOKEN" "$1" |
		sed -n 's/^[Ee][Tt][Aa][Gg]: *\([^[:space:]]*\).*/\1/p'
}

# The whole list from the render cache against the same pipelines rendered
# on every request (a page of all of them is never cached): what the cache
# is worth, in one set of rounds.
report_rendered() {
	local page=$URL/platform/pipelines?page=1\&limit=100 code
	((PIPELINES <= 100)) || { printf '\n(more than 100 pipelines: no rendered rounds)\n'; return 0; }
	code=$(curl -sk -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $TOKEN" "$page")
	[[ $code == 200 ]] || { echo "bench/platform.sh: $page answers $code" >&2; exit 1; }
	printf '\nthe cache against a render per request: (f) = %s\n' "$page"
	wrk_rounds 40 '(a) /_bench/static' "$STATIC" '(b) GET /platform/pipelines' "$LIST" \
		'(f) the same, rendered each time' "$page" -H "Authorization: Bearer $TOKEN"
	printf '  ratio b/a: %s   ratio f/a: %s   ratio b/f (the cache): %s\n' \
		"$(ratio "$bm" "$am")" "$(ratio "$cm" "$am")" "$(ratio "$bm" "$cm")"
}

# The 304 path: the same reads when the caller already holds the answer.
report_not_modified() {
	local list_tag detail_tag inm code
	list_tag=$(etag_of "$LIST")
	detail_tag=$(etag_of "$DETAIL")
	if [[ -z $list_tag || -z $detail_tag ]]; then
		printf '
(no ETag on the reads: no 304 rounds)
'
		return 0
	fi
	inm="$list_tag, $detail_tag"
	for u in "$LIST" "$DETAIL"; do
		code=$(curl -sk -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $TOKEN" \
			-H "If-None-Match: $inm" "$u")
		[[ $code == 304 ]] || { echo "bench/platform.sh: $u with If-None-Match answers $code" >&2; exit 1; }
	done
	printf '
the 304 path: If-None-Match: %s
' "$inm"
	wrk_rounds 30 '(a) /_bench/static' "$STATIC" '(d) GET /platform/pipelines 304' "$LIST" \
		'(e) GET /platform/pipeline/ID 304' "$DETAIL" -H "Authorization: Bearer $TOKEN" \
		-H "If-None-Match: $inm"
	printf '  ratio d/a of median req/s: %s\n' "$(ratio "$bm" "$am")"
	printf '  ratio e/a of median req/s: %s\n' "$(ratio "$cm" "$am")"
	printf '  ratio d/b (the poll against the full list): %s\n' "$(ratio "$bm" "$list_rps")"
}

# The peer's Debian packages; uvloop and httptools only where Debian has them.
peer_deps() {
	local -a want=(python3-fastapi python3-uvicorn python3-pymysql) opt=(python3-uvloop python3-httptools)
	local p
	for p in "${opt[@]}"; do
		apt-cache show "$p" >/dev/null 2>&1 && want+=("$p")
	done
	dpkg -s "${want[@]}" >/dev/null 2>&1 && return 0
	echo "installing the peer's packages: ${want[*]}" >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${want[@]}" >"$TMP/apt.log" 2>&1 ||
		{ cat "$TMP/apt.log" >&2; echo "bench/platform.sh: apt-get install failed" >&2; exit 1; }
}

PEER_PID=
peer_stop() {
	[[ -n $PEER_PID ]] || return 0
	kill "$PEER_PID" 2>/dev/null || true
	wait "$PEER_PID" 2>/dev/null || true
	PEER_PID=
	rm -f "$SLUICE_VAR/bench-peer.sock"
}

# peer_start UVICORN-OPTIONS...: the peer on the socket nginx proxies to,
# answering 200 within 30 s.
peer_start() {
	local i code
	rm -f "$SLUICE_VAR/bench-peer.sock"
	SLUICE_DB_SOCKET=$SLUICE_DB_SOCKET SLUICE_JWT_SECRET_FILE=$SLUICE_JWT_SECRET_FILE \
		/usr/bin/python3 -m uvicorn --app-dir "$ROOT/bench/peer" pipelines_fastapi:app \
		--uds "$SLUICE_VAR/bench-peer.sock" --workers "$PEER_WORKERS" \
		--log-level warning --no-access-log "$@" >"$TMP/peer.log" 2>&1 &
	PEER_PID=$!
	for ((i = 0; i < 300; i++)); do
		code=$(curl -sk -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $TOKEN" "$PEER_URL")
		[[ $code == 200 ]] && return 0
		kill -0 "$PEER_PID" 2>/dev/null || break
		sleep 0.1
	done
	cat "$TMP/peer.log" >&2
	echo "bench/platform.sh: the peer does not answer ($code)" >&2
	exit 1
}

# (a), (b) and the peer in one set of rounds, per variant.
report_peer() {
	local -a variants=('(p) peer: uvicorn asyncio + h11|--loop asyncio --http h11')
	local v label opts best=0 best_label=none best_ratio=0
	/usr/bin/python3 -c 'import uvloop, httptools' 2>/dev/null &&
		variants+=('(q) peer: uvicorn uvloop + httptools|--loop uvloop --http httptools')
	for v in "${variants[@]}"; do
		label=${v%%|*} opts=${v#*|}
		# shellcheck disable=SC2086 # the options are words
		peer_start $opts
		curl -sk -o "$TMP/sluice.json" -H "Authorization: Bearer $TOKEN" "$LIST"
		curl -sk -o "$TMP/peer.json" -H "Authorization: Bearer $TOKEN" "$PEER_URL"
		if ! cmp -s "$TMP/sluice.json" "$TMP/peer.json"; then
			cmp "$TMP/sluice.json" "$TMP/peer.json" >&2
			echo "bench/platform.sh: the peer's body is not sluice's" >&2
			exit 1
		fi
		printf '
%s, %s workers: its body is byte for byte sluice'"'"'s (%s bytes)\n' \
			"$label" "$PEER_WORKERS" "$(wc -c <"$TMP/peer.json")"
		wrk_rounds 36 '(a) /_bench/static' "$STATIC" '(b) GET /platform/pipelines' "$LIST" \
				"$label" "$PEER_URL" -H "Authorization: Bearer $TOKEN"
		printf '  ratio b/a: %s   ratio peer/a: %s   ratio b/peer (sluice over the peer): %s\n' \
			"$(ratio "$bm" "$am")" "$(ratio "$cm" "$am")" "$(ratio "$bm" "$cm")"
		if awk -v c="$cm" -v b="$best" 'BEGIN { exit !(c > b) }'; then
			best=$cm best_label=$label best_ratio=$(ratio "$bm" "$cm")
		fi
		peer_stop
	done
	printf '
the peer'"'"'s best variant: %s; sluice over it, same rounds: %s   (target >= 15)\n' \
		"$best_label" "$best_ratio"
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
	printf 'load average at the start: %s (the machine may be shared)\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
	printf 'wrk -t%s -c%s -d%s --latency, %s rounds, sluice workers = 2, TLS on one keep-alive connection each\n' \
		"$THREADS" "$CONNECTIONS" "$DURATION" "$ROUNDS"
	printf 'data: one customer, %s pipelines x %s jobs (seeded through POST /platform/pipeline)\n' \
		"$PIPELINES" "$JOBS"
	printf '(a) %s\n(b) %s  (%s bytes)\n(c) %s  (%s bytes)\n\n' "$STATIC" "$LIST" "$list_size" \
		"$DETAIL" "$detail_size"

	wrk_rounds 26 '(a) /_bench/static' "$STATIC" '(b) GET /platform/pipelines' "$LIST" \
		'(c) GET /platform/pipeline/ID' "$DETAIL" -H "Authorization: Bearer $TOKEN"
	printf '  ratio b/a of median req/s: %s   (target >= 0.05)\n' "$(ratio "$bm" "$am")"
	printf '  ratio c/a of median req/s: %s   (target >= 0.40)\n' "$(ratio "$cm" "$am")"
	list_rps=$bm
	report_rendered
	report_not_modified
	[[ $PEER == 0 ]] || report_peer
	printf '\nload average at the end: %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
}

[[ $PEER == 0 ]] || peer_deps
echo "seeding $PIPELINES pipelines x $JOBS jobs..."
seed
mkdir -p "$RESULTS"
report 2>&1 | tee "$OUT"
printf '\nsaved to %s\n' "${OUT#"$ROOT"/}"
