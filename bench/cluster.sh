#!/usr/bin/env bash
# bench/cluster.sh - sluice on the local three-node Galera cluster with two
# hosts (scripts/dev cluster), against the single-node bench instance.
#
#   1. Throughput, on one node then on the cluster, through nginx: wrk
#      against (r) GET /platform/pipeline/ID, a read, and (w) POST
#      /platform/pipeline, a write of one transaction (a pipeline and its
#      job), ROUNDS rounds of DURATION each; req/s, p99 and errors, the
#      medians and the cluster's ratio to one node.
#   2. The chaos soak on the cluster (bench/chaos.pl with the cluster's
#      faults: a database node killed -9 and rejoining, host b's sluice work
#      killed -9 twice, host a's sluice serve stopped), CHAOS seconds of load
#      and up to DRAIN to drain, then its checks: every run executed once,
#      no duplicate warehouse rows, every question and inference ended, the
#      API answering outside the faults' own moments, the three nodes
#      holding the same rows.
#
# The cluster is made anew (var/cluster is removed first).  The output is
# saved to bench/results/cluster-<date>.txt; both stacks are stopped at the
# end.  Not part of the test suite (it takes 15 minutes).
# The machine is shared and has 2 CPUs for three MariaDB nodes, two hosts
# and nginx: compare the ratio, not req/s across runs.
#
# Environment: ROUNDS (3), DURATION (10s), CONNECTIONS (8), THREADS (2),
# CHAOS (300), DRAIN (480; host b's work items wait out the 300 s stale
# limit), SLUICE_PORT (the cluster's, 38443), SINGLE_PORT (the bench
# instance's, 28443).
set -euo pipefail

ROOT=$(dirname "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")")
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-10s}
CONNECTIONS=${CONNECTIONS:-8}
THREADS=${THREADS:-2}
[[ $DURATION =~ ^[0-9]+$ ]] && DURATION=${DURATION}s
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || { echo "ROUNDS must be a positive number" >&2; exit 2; }
CHAOS=${CHAOS:-300}
DRAIN=${DRAIN:-480}
CLUSTER_PORT=${SLUICE_PORT:-38443}
SINGLE_PORT=${SINGLE_PORT:-28443}
DEV=$ROOT/scripts/dev
RESULTS=$ROOT/bench/results
OUT=$RESULTS/cluster-$(date -u +%Y%m%d-%H%M%S).txt
TMP=$(mktemp -d)

cleanup() {
	SLUICE_PORT=$SINGLE_PORT "$DEV" down bench >/dev/null 2>&1 || true
	SLUICE_PORT=$CLUSTER_PORT "$DEV" cluster down >/dev/null 2>&1 || true
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

command -v wrk >/dev/null 2>&1 || "$DEV" deps
. "$ROOT/bench/lib/wrk.sh"
# shellcheck source=bench/lib/results.sh
. "$ROOT/bench/lib/results.sh"

# One pipeline to read, a token, and the write's script, for the stack whose
# SLUICE_* variables are set.
seed() {
	TOKEN=$("$SLUICE_BIN" token -c "$SLUICE_CONF" --customer demo --sub bench@example.com \
		--permissions PLATFORM.READ,PLATFORM.WRITE) || { echo "sluice token failed" >&2; exit 1; }
	local job='{"input":{"connector":"jdbc","plugin":"postgres","table_name":"public.orders",'
	job+='"load_type":"full_load"},"output":{"plugin":"mariadb","raw":{"table_schema":"bench",'
	local body="{\"name\":\"bench read\",\"cron\":\"0 0 1 1 *\",\"jobs\":[$job\"table_name\":\"t\"}}}]}"
	PIPELINE=$(curl -sk -X POST -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
		--data "$body" "$1/platform/pipeline" | jq -r .pipeline_id)
	[[ $PIPELINE =~ ^[0-9a-f_]+$ ]] || { echo "bench/cluster.sh: no pipeline made" >&2; exit 1; }
	cat >"$TMP/write.lua" <<-EOF
		local threads, n = 0, 0
		setup = function(thread)
		  threads = threads + 1
		  thread:set("tid", threads)
		end
		request = function()
		  n = n + 1
		  local name = tid .. "_" .. n
		  local body = '{"name":"bench write ' .. name .. '","cron":"0 0 1 1 *","jobs":[$job'
		    .. '"table_name":"w' .. name .. '"}}}]}'
		  return wrk.format("POST", nil, {["Authorization"] = "Bearer $TOKEN",
		    ["Content-Type"] = "application/json"}, body)
		end
	EOF
}

# (r) and (w) on the stack at $1, ROUNDS rounds; sets r_med and w_med.
throughput() {
	local url=$1 label=$2 r res rr rp re wr wp we
	local -a r_rps=() w_rps=() r_p99=() w_p99=()
	run_wrk "$url/platform/pipeline/$PIPELINE" 3s -H "Authorization: Bearer $TOKEN" >/dev/null
	for ((r = 1; r <= ROUNDS; r++)); do
		res=$(run_wrk "$url/platform/pipeline/$PIPELINE" "$DURATION" -H "Authorization: Bearer $TOKEN")
		read -r rr rp re <<<"$res"
		res=$(run_wrk "$url/platform/pipeline" "$DURATION" -s "$TMP/write.lua")
		read -r wr wp we <<<"$res"
		r_rps+=("$rr") r_p99+=("$rp") w_rps+=("$wr") w_p99+=("$wp")
		printf '  %-8s round %d  (r) %9.2f req/s p99 %8.3f ms errors %d   (w) %9.2f req/s p99 %8.3f ms errors %d\n' \
			"$label" "$r" "$rr" "$rp" "$re" "$wr" "$wp" "$we"
	done
	r_med=$(median "${r_rps[@]}")
	w_med=$(median "${w_rps[@]}")
	printf '  %-8s medians  (r) %9s req/s p99 %8s ms                (w) %9s req/s p99 %8s ms\n' \
		"$label" "$r_med" "$(median "${r_p99[@]}")" "$w_med" "$(median "${w_p99[@]}")"
	# The chaos soak's probe lists the demo customer's pipelines: not these.
	eval "$SLUICE_MYSQL" -e "\"DELETE FROM pipelines WHERE name LIKE 'bench %'\"" ||
		echo "bench/cluster.sh: cannot delete the bench's pipelines"
}

mkdir -p "$RESULTS"
bench_cluster() {
	echo "== cluster bench $(date -u +%Y-%m-%dT%H:%M:%SZ), $(uname -m), $(nproc) CPUs," \
		"load average $(cut -d' ' -f1-3 /proc/loadavg) (a shared machine)"
	echo "== command: ROUNDS=$ROUNDS DURATION=$DURATION CONNECTIONS=$CONNECTIONS CHAOS=$CHAOS" \
		"DRAIN=$DRAIN SLUICE_PORT=$CLUSTER_PORT SINGLE_PORT=$SINGLE_PORT bench/cluster.sh"
	echo "== wrk -t$THREADS -c$CONNECTIONS -d$DURATION: (r) GET /platform/pipeline/ID," \
		"(w) POST /platform/pipeline"

	echo "starting the single-node bench instance..."
	SLUICE_PORT=$SINGLE_PORT "$DEV" up bench >"$TMP/up-single.log" 2>&1 ||
		{ cat "$TMP/up-single.log"; echo "scripts/dev up bench failed"; exit 1; }
	eval "$(SLUICE_PORT=$SINGLE_PORT "$DEV" env bench)"
	seed "$SLUICE_URL"
	throughput "$SLUICE_URL" 'one node'
	single_r=$r_med single_w=$w_med
	SLUICE_PORT=$SINGLE_PORT "$DEV" down bench >/dev/null 2>&1

	# The soak's checks count what its folder and tables hold: a cluster of
	# its own, made from nothing.
	echo "starting the cluster (var/cluster made anew)..."
	SLUICE_PORT=$CLUSTER_PORT "$DEV" cluster down >/dev/null 2>&1 || true
	rm -rf "$ROOT/var/cluster"
	SLUICE_PORT=$CLUSTER_PORT "$DEV" cluster up >"$TMP/up-cluster.log" 2>&1 ||
		{ cat "$TMP/up-cluster.log"; echo "scripts/dev cluster up failed"; exit 1; }
	eval "$(SLUICE_PORT=$CLUSTER_PORT "$DEV" cluster env)"
	SLUICE_PORT=$CLUSTER_PORT "$DEV" cluster status
	seed "$SLUICE_CLUSTER_URL"
	throughput "$SLUICE_CLUSTER_URL" 'cluster'
	printf '  cluster / one node: (r) %s  (w) %s\n' "$(ratio "$r_med" "$single_r")" \
		"$(ratio "$w_med" "$single_w")"

	echo
	echo "== chaos on the cluster: $CHAOS s of load, then up to $DRAIN s to drain"
	mkdir -p "$TMP/chaos"
	SLUICE_PORT=$CLUSTER_PORT CHAOS_DIR=$TMP/chaos DURATION=$CHAOS DRAIN=$DRAIN \
		perl "$ROOT/bench/chaos.pl"
}
bench_tee "$OUT" bench_cluster
