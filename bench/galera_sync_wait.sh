#!/usr/bin/env bash
# bench/galera_sync_wait.sh - what wsrep_sync_wait=1 (read-your-writes, the
# cluster's setting) costs a read: one session on node2 runs N primary-key
# reads of the pipelines table with wsrep_sync_wait 0 and 1 in turn, 5
# rounds each, first idle, then while node1 commits a stream of small
# writes.  Prints each round and the medians (microseconds per read).
# Needs the local cluster: scripts/dev cluster up.
# Usage: bench/galera_sync_wait.sh [reads per round, default 5000]
set -euo pipefail
ROOT=$(dirname "$(dirname "$(readlink -f "$0")")")
eval "$("$ROOT/scripts/dev" cluster env)"
N=${1:-5000}
TMP=$(mktemp -d)
WRITER=
cleanup() {
	[[ -z $WRITER ]] || kill "$WRITER" 2>/dev/null || true
	wait 2>/dev/null || true
	rm -rf "$TMP"
}
trap cleanup EXIT

node() { local v=SLUICE_CLUSTER_NODE${1}_SOCKET; mariadb --no-defaults --socket="${!v}" -uroot -N -B "${@:2}"; }

node 1 -e "CREATE DATABASE IF NOT EXISTS probe_sw; CREATE TABLE IF NOT EXISTS probe_sw.w (id INT AUTO_INCREMENT PRIMARY KEY, v INT)"
for mode in 0 1; do
	{
		printf 'SET SESSION wsrep_sync_wait = %s;\n' "$mode"
		for ((i = 0; i < N; i++)); do
			printf "SELECT COUNT(*) FROM pipelines WHERE id = 'p%d';\n" "$i"
		done
	} >"$TMP/reads-$mode.sql"
done

# microseconds per read of one round
round() {
	local t0 t1
	t0=$(date +%s%N)
	node 2 sluice <"$TMP/reads-$1.sql" >/dev/null
	t1=$(date +%s%N)
	echo $(((t1 - t0) / 1000 / N))
}

median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

measure() {
	local label=$1 mode r
	for mode in 0 1; do : >"$TMP/$label-$mode"; done
	for r in 1 2 3 4 5; do
		for mode in 0 1; do
			round "$mode" >>"$TMP/$label-$mode"
		done
	done
	for mode in 0 1; do
		printf '%-22s wsrep_sync_wait=%s  rounds(us/read): %s  median %s\n' "$label" "$mode" \
			"$(tr '\n' ' ' <"$TMP/$label-$mode")" "$(median <"$TMP/$label-$mode")"
	done
}

echo "# $N reads per round, node2, $(date -u +%FT%TZ)"
measure idle
# A writer on node1: one small autocommit INSERT after another.
(while :; do node 1 -e "INSERT INTO probe_sw.w (v) SELECT seq FROM seq_1_to_10" || break; done) >/dev/null 2>&1 &
WRITER=$!
measure "writes on node1"
kill "$WRITER" 2>/dev/null || true
wait "$WRITER" 2>/dev/null || true
WRITER=
node 1 -e "DROP DATABASE probe_sw"
