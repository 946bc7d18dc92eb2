#!/usr/bin/env bash
# bench/galera_probe.sh - what Galera does and does not guarantee, asked of
# the local cluster (scripts/dev cluster up) in a scratch database:
#   1. GET_LOCK held on node1: can node2 take the same lock?
#   2. the error a node outside the primary component gives a query
#   3. a certification failure as the client sees it (number, statement)
#   4. CREATE TEMPORARY TABLE and a table without a primary key: replicated?
#   5. how long IST takes after a 30 s outage of node3 with writes meanwhile
# Prints what each client saw; results go to bench/results/ by hand.
# Usage: bench/galera_probe.sh [outage seconds, default 30]
set -euo pipefail
ROOT=$(dirname "$(dirname "$(readlink -f "$0")")")
eval "$("$ROOT/scripts/dev" cluster env)"
OUTAGE=${1:-30}
TMP=$(mktemp -d)
SESSIONS=()
cleanup() {
	local s
	for s in "${SESSIONS[@]}"; do eval "exec {fd_$s}>&-" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$TMP"
}
trap cleanup EXIT

sock() { local v=SLUICE_CLUSTER_NODE${1}_SOCKET; printf '%s' "${!v}"; }
sql() { mariadb --no-defaults --socket="$(sock "$1")" -uroot -N -B probe -e "$2"; }

# An open client session on node $2 named $1: statements go in through a
# fifo, answers and errors come out in $TMP/$1.out.
MARK=0
session() {
	local name=$1 node=$2
	mkfifo "$TMP/$name.in"
	mariadb --no-defaults --socket="$(sock "$node")" -uroot -N -B -n --force probe \
		<"$TMP/$name.in" >"$TMP/$name.out" 2>&1 &
	eval "exec {fd_$name}>\"$TMP/$name.in\""
	SESSIONS+=("$name")
}
# Send statement $2 to session $1 and print what it answered.
say() {
	local name=$1 fd out i
	fd=fd_$name
	MARK=$((MARK + 1))
	local before
	before=$(wc -c <"$TMP/$name.out")
	printf '%s\nSELECT "mark-%s";\n' "$2" "$MARK" >&"${!fd}"
	for ((i = 0; i < 300; i++)); do
		grep -q "^mark-$MARK\$" "$TMP/$name.out" && break
		sleep 0.1
	done
	out=$(tail -c +"$((before + 1))" "$TMP/$name.out" | grep -v "^mark-$MARK\$" || true)
	printf '  [%s] %s\n' "$name" "$2"
	[[ -z $out ]] || printf '%s\n' "$out" | sed 's/^/      -> /'
}

state() { mariadb --no-defaults --socket="$(sock "$1")" -uroot -N -B -e "SHOW GLOBAL STATUS LIKE '$2'" | cut -f2; }

mariadb --no-defaults --socket="$(sock 1)" -uroot -e "DROP DATABASE IF EXISTS probe; CREATE DATABASE probe"
sql 1 "CREATE TABLE t (id INT PRIMARY KEY, v INT) ENGINE=InnoDB; INSERT INTO t VALUES (1, 0), (2, 0)"

echo "1. GET_LOCK on two nodes"
session l1 1
session l2 2
say l1 "SELECT GET_LOCK('probe', 0);"
say l2 "SELECT GET_LOCK('probe', 0);"
say l1 "SELECT RELEASE_LOCK('probe');"

echo "3. certification failure: node1 and node2 update row 1 at once"
session c1 1
session c2 2
say c1 "BEGIN; UPDATE t SET v = 1 WHERE id = 1;"
say c2 "BEGIN; UPDATE t SET v = 2 WHERE id = 1;"
say c2 "COMMIT;"
say c1 "SELECT v FROM t WHERE id = 2;"
say c1 "COMMIT;"
echo "   and when node1's next statement is COMMIT itself:"
say c1 "BEGIN; UPDATE t SET v = 3 WHERE id = 1;"
say c2 "UPDATE t SET v = 4 WHERE id = 1;"
say c1 "COMMIT;"
say c1 "SELECT id, v FROM t;"
echo "   both commit at the same moment (certification proper):"
say c1 "BEGIN; UPDATE t SET v = 5 WHERE id = 2;"
say c2 "BEGIN; UPDATE t SET v = 6 WHERE id = 2;"
printf 'COMMIT;\nSELECT "mark-c1x";\n' >&"$fd_c1"
printf 'COMMIT;\nSELECT "mark-c2x";\n' >&"$fd_c2"
for ((i = 0; i < 100; i++)); do
	grep -q mark-c1x "$TMP/c1.out" && grep -q mark-c2x "$TMP/c2.out" && break
	sleep 0.1
done
printf '      c1 -> %s\n' "$(grep -v mark "$TMP/c1.out" | tail -n1)"
printf '      c2 -> %s\n' "$(grep -v mark "$TMP/c2.out" | tail -n1)"
say c1 "SELECT id, v FROM t;"

echo "4. temporary table and a table without a primary key"
session s1 1
say s1 "CREATE TEMPORARY TABLE tmp (id INT PRIMARY KEY); INSERT INTO tmp VALUES (7);"
say s1 "INSERT INTO t SELECT id, 70 FROM tmp;"
printf '  node2 sees t row 7: %s\n' "$(sql 2 "SELECT COUNT(*) FROM t WHERE id = 7")"
sql 1 "CREATE TABLE nopk (a INT, b VARCHAR(10)) ENGINE=InnoDB; INSERT INTO nopk VALUES (1, 'x'), (1, 'x'), (2, 'y')"
printf '  nopk on node2 after 3 inserts on node1: %s rows\n' "$(sql 2 "SELECT COUNT(*) FROM nopk")"
sql 1 "DELETE FROM nopk WHERE a = 1 LIMIT 1; UPDATE nopk SET b = 'z' WHERE a = 2"
printf '  nopk on node2 after a DELETE and UPDATE on node1: %s\n' "$(sql 2 "SELECT GROUP_CONCAT(CONCAT(a, b) ORDER BY a) FROM nopk")"

echo "2. a node outside the primary component (node3 isolated)"
session p3 3
mariadb --no-defaults --socket="$(sock 3)" -uroot -e "SET GLOBAL wsrep_provider_options = 'gmcast.isolate=1'"
for ((i = 0; i < 100; i++)); do
	[[ $(state 3 wsrep_cluster_status) != Primary ]] && break
	sleep 0.1
done
printf '  node3: %s, %s\n' "$(state 3 wsrep_cluster_status)" "$(state 3 wsrep_local_state_comment)"
say p3 "SELECT v FROM t WHERE id = 1;"
say p3 "UPDATE t SET v = 9 WHERE id = 1;"
say p3 "SELECT 1;"
say p3 "SET SESSION wsrep_sync_wait = 0; SELECT v FROM t WHERE id = 1;"
mariadb --no-defaults --socket="$(sock 3)" -uroot -e "SET GLOBAL wsrep_provider_options = 'gmcast.isolate=0'"
for ((i = 0; i < 600; i++)); do
	[[ $(state 3 wsrep_local_state_comment) == Synced && $(state 3 wsrep_cluster_status) == Primary ]] && break
	sleep 0.1
done
printf '  node3 after gmcast.isolate=0: %s, %s, size %s\n' "$(state 3 wsrep_cluster_status)" \
	"$(state 3 wsrep_local_state_comment)" "$(state 3 wsrep_cluster_size)"

echo "5. IST after ${OUTAGE}s of node3 killed -9, writes on node1 meanwhile"
"$SLUICE_DEV" cluster node-kill 3
sql 1 "CREATE TABLE w (id INT AUTO_INCREMENT PRIMARY KEY, pad CHAR(200))"
end=$((SECONDS + OUTAGE))
n=0
while ((SECONDS < end)); do
	sql 1 "INSERT INTO w (pad) SELECT REPEAT('x', 200) FROM seq_1_to_100"
	n=$((n + 100))
done
printf '  %s rows written while node3 was down\n' "$n"
log=$SLUICE_CLUSTER_NODE3_LOG
lines=$(wc -l <"$log")
t0=$(date +%s.%N)
"$SLUICE_DEV" cluster node-start 3
t1=$(date +%s.%N)
awk -v a="$t0" -v b="$t1" 'BEGIN { printf "  node-start 3 until Synced: %.1f s\n", b - a }'
tail -n +"$((lines + 1))" "$log" | grep -E 'Receiving IST: |IST received|SST received|rsync (IST|SST) completed|Recovered position' | head -n 8 | sed 's/^/      /'
printf '  node3 rows in w: %s of %s\n' "$(sql 3 "SELECT COUNT(*) FROM w")" "$(sql 1 "SELECT COUNT(*) FROM w")"
mariadb --no-defaults --socket="$(sock 1)" -uroot -e "DROP DATABASE probe"
