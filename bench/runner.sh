#!/usr/bin/env bash
# bench/runner.sh - the pipeline runner's jdbc path against dump-and-restore.
#
# Starts the `bench` instance (its own MariaDB, the source MariaDB on port + 1,
# sluice serve + work), fills a ROWS-row table in the source MariaDB, then
#   (a) a sluice full_load run of it into the warehouse (POST execute, waited
#       for through the API; the time is the run's started_at..finished_at),
#   (b) mariadb-dump of the same table piped into mariadb on the warehouse
#       server (a fresh database), the usual dump-and-restore,
#   (c) after 1% new rows, an incremental run (bookmark set to the table's
#       largest updated_at with PATCH, so it reads only the new rows).
# While (a) and (c) run, the task child (the process that holds the source
# and warehouse connections) is sampled every 50 ms for VmHWM (peak resident
# memory) and VmPeak (peak address space, what the job's RLIMIT_AS counts).
# Prints rows/s, the ratio a/b (target <= 1: sluice at least as fast), the
# incremental time as a fraction of (a) (target <= 5%), the peak memory
# (target < 64 MB), and saves the output to bench/results/runner-<date>.txt.
# The instance is stopped at the end.
#
# Environment: ROWS (1000000), SLUICE_PORT (28443).
set -euo pipefail

ROOT=$(dirname "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")")
ROWS=${ROWS:-1000000}
[[ $ROWS =~ ^[1-9][0-9]*$ ]] || { echo "ROWS must be a positive number" >&2; exit 2; }
NEW=$((ROWS / 100))

export SLUICE_INSTANCE=bench
export SLUICE_PORT=${SLUICE_PORT:-28443}
DEV=$ROOT/scripts/dev
RESULTS=$ROOT/bench/results
OUT=$RESULTS/runner-$(date -u +%Y%m%d-%H%M%S).txt
TMP=$(mktemp -d)

# shellcheck source=bench/lib/instance.sh
. "$ROOT/bench/lib/instance.sh"
bench_instance_up bench/runner.sh

bench_platform_client
now() { date +%s.%N; }

# --- the source table -------------------------------------------------------------
echo "filling the source table with $ROWS rows..."
src "DROP TABLE IF EXISTS bench_src;
CREATE TABLE bench_src (
	id BIGINT NOT NULL PRIMARY KEY,
	customer_id INT NOT NULL,
	name VARCHAR(64) NOT NULL,
	amount DECIMAL(12,2) NOT NULL,
	status VARCHAR(16) NOT NULL,
	note VARCHAR(255) NULL,
	created_at DATETIME(6) NOT NULL,
	updated_at DATETIME(6) NOT NULL,
	KEY bench_src_updated (updated_at)
);
INSERT INTO bench_src SELECT seq, seq % 9973, CONCAT('customer name ', seq), (seq % 100000) / 100,
	ELT(1 + seq % 4, 'new', 'paid', 'shipped', 'cancelled'),
	IF(seq % 5 = 0, NULL, CONCAT('a note about order ', seq, ' that is of a usual length')),
	'2024-01-01' + INTERVAL seq SECOND, '2024-01-01' + INTERVAL seq SECOND
FROM seq_1_to_$ROWS;
ANALYZE TABLE bench_src;" >/dev/null
BYTES=$(src "SELECT DATA_LENGTH FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'source' AND TABLE_NAME = 'bench_src'")

# --- the task child's memory -----------------------------------------------------------
# Sample every grandchild of `sluice work` (supervisor -> task child) until
# the flag file goes; the largest VmHWM and VmPeak seen, in kB.
WORK_PID=$(cat "$SLUICE_WORK_PID")
sample_start() {
	: >"$TMP/sampling"
	(
		hwm=0 peak=0
		while [[ -e $TMP/sampling ]]; do
			for sup in $(pgrep -P "$WORK_PID" 2>/dev/null); do
				for child in $(pgrep -P "$sup" 2>/dev/null); do
					while read -r k v _; do
						case $k in
						VmHWM:) ((v > hwm)) && hwm=$v ;;
						VmPeak:) ((v > peak)) && peak=$v ;;
						esac
					done <"/proc/$child/status" 2>/dev/null || true
				done
			done
			echo "$hwm $peak" >"$TMP/mem"
			sleep 0.05
		done
	) &
	SAMPLER=$!
}
sample_stop() {
	rm -f "$TMP/sampling"
	wait "$SAMPLER" 2>/dev/null || true
	read -r MEM_HWM MEM_PEAK <"$TMP/mem"
}

# Execute, wait, and print "seconds rows_loaded" of the run (its own times).
run_pipeline() {
	local pid=$1 run status
	run=$(api POST /platform/pipeline/execute "{\"pipeline_id\":\"$pid\",\"customer_id\":\"$SLUICE_DEMO_CUSTOMER_ID\"}" |
		jget data.run_id)
	while :; do
		api GET "/platform/pipeline/$pid/pipeline_run" >"$TMP/runs.json"
		status=$(python3 -c '
import json, sys, datetime
runs = json.load(open(sys.argv[2]))["data"]["runs"]
r = [x for x in runs if x["run_id"] == sys.argv[1]][0]
if r["status"] in ("SUCCESS", "FAILED"):
    p = lambda s: datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ")
    print(r["status"], (p(r["finished_at"]) - p(r["started_at"])).total_seconds(), r["rows_loaded"])
' "$run" "$TMP/runs.json")
		[[ -n $status ]] && break
		sleep 0.1
	done
	set -- $status
	if [[ $1 != SUCCESS ]]; then
		echo "bench/runner.sh: run $run $1" >&2
		api GET "/platform/pipeline/pipeline_run/$run/logs" >&2
		exit 1
	fi
	echo "$2 $3 $run"
}

# The runner's own figure for the task: "peak memory N MB" of its log line
# (the larger of the sampled VmPeak and the child's maxrss).
runner_peak() {
	api GET "/platform/pipeline/pipeline_run/$1/logs" |
		grep -o 'extract_load[^}]*peak memory [0-9]* MB' | grep -o '[0-9]* MB' | head -n1
}

CID=$(api POST /platform/connections "{\"name\":\"bench-src-$$\",\"plugin\":\"mariadb\",
	\"host\":\"127.0.0.1\",\"port\":$SLUICE_SOURCE_PORT,\"database\":\"source\",
	\"user\":\"source\",\"password\":\"$SLUICE_SOURCE_PASSWORD\"}" | jget connection_id)
pipeline() {
	api POST /platform/pipeline "{\"name\":\"bench $1\",\"cron\":null,\"jobs\":[{\"input\":{
		\"connector\":\"jdbc\",\"plugin\":\"mariadb\",\"connection_id\":\"$CID\",
		\"table_name\":\"bench_src\",\"load_type\":\"$1\"$2},
		\"output\":{\"plugin\":\"mariadb\",\"raw\":{\"table_schema\":\"bench\",\"table_name\":\"orders\"}}}]}" |
		jget pipeline_id
}
wh "DROP DATABASE IF EXISTS bench; DROP DATABASE IF EXISTS bench_dump; CREATE DATABASE bench_dump"

# --- (a) sluice full_load ------------------------------------------------------------
PFULL=$(pipeline full_load "")
echo "(a) sluice full_load of $ROWS rows..."
sample_start
read -r A_SECS A_ROWS A_RUN < <(run_pipeline "$PFULL")
sample_stop
A_HWM=$MEM_HWM A_PEAK=$MEM_PEAK
[[ $(wh "SELECT COUNT(*) FROM bench.orders") == "$ROWS" ]] || { echo "bench/runner.sh: destination count wrong" >&2; exit 1; }

# --- (b) mariadb-dump | mariadb ------------------------------------------------------------
echo "(b) mariadb-dump bench_src | mariadb bench_dump..."
T0=$(now)
mariadb-dump --no-defaults -h 127.0.0.1 -P "$SLUICE_SOURCE_PORT" -u source \
	-p"$SLUICE_SOURCE_PASSWORD" --single-transaction source bench_src |
	mariadb --no-defaults --socket="$SLUICE_DB_SOCKET" -uroot bench_dump
B_SECS=$(echo "$(now) - $T0" | bc -l)
[[ $(wh "SELECT COUNT(*) FROM bench_dump.bench_src") == "$ROWS" ]] || { echo "bench/runner.sh: dump count wrong" >&2; exit 1; }

# --- (c) incremental after 1% new rows --------------------------------------------------------
PINC=$(pipeline incremental ",\"incremental_column_name\":\"updated_at\",\"incremental_column_type\":\"datetime\"")
JINC=${PINC}_0
MAXTS=$(src "SELECT DATE_FORMAT(MAX(updated_at), '%Y-%m-%dT%H:%i:%s.%f') FROM bench_src")
api PATCH "/platform/jobs/$JINC/input" "{\"connector\":\"jdbc\",\"incremental_column_value\":\"$MAXTS\"}" >/dev/null
src "INSERT INTO bench_src SELECT seq, seq % 9973, CONCAT('customer name ', seq), (seq % 100000) / 100,
	'new', NULL, '2025-01-01' + INTERVAL seq SECOND, '2025-01-01' + INTERVAL seq SECOND
	FROM seq_$((ROWS + 1))_to_$((ROWS + NEW))"
echo "(c) incremental run after $NEW new rows..."
sample_start
read -r C_SECS C_ROWS C_RUN < <(run_pipeline "$PINC")
sample_stop
C_HWM=$MEM_HWM C_PEAK=$MEM_PEAK
[[ $C_ROWS == "$NEW" ]] || { echo "bench/runner.sh: incremental loaded $C_ROWS rows, not $NEW" >&2; exit 1; }
[[ $(wh "SELECT COUNT(*) FROM bench.orders") == "$((ROWS + NEW))" ]] ||
	{ echo "bench/runner.sh: destination count after the incremental run is wrong" >&2; exit 1; }

mkdir -p "$RESULTS"
{
	echo "bench/runner.sh  $(date -u +%Y-%m-%dT%H:%M:%SZ)  $(uname -n)  $(nproc) CPUs"
	echo "source table: $ROWS rows, $((BYTES / 1048576)) MB of InnoDB data (8 columns)"
	echo
	printf '(a) sluice full_load          %8.2f s  %10.0f rows/s  (rows_loaded %s)\n' \
		"$A_SECS" "$(echo "$A_ROWS / $A_SECS" | bc -l)" "$A_ROWS"
	printf '(b) mariadb-dump | mariadb    %8.2f s  %10.0f rows/s\n' \
		"$B_SECS" "$(echo "$ROWS / $B_SECS" | bc -l)"
	printf '    ratio a/b                 %8.2f     (target <= 1.00)\n' \
		"$(echo "$A_SECS / $B_SECS" | bc -l)"
	printf '(c) incremental, %s new rows %8.2f s  %10.0f rows/s\n' \
		"$NEW" "$C_SECS" "$(echo "$C_ROWS / $C_SECS" | bc -l)"
	printf '    incremental / full        %8.2f %%   (target <= 5%%)\n' \
		"$(echo "100 * $C_SECS / $A_SECS" | bc -l)"
	echo
	printf 'task child peak memory (a): VmHWM %d MB resident, VmPeak %d MB address space (sampled every 50 ms; target < 64 MB)\n' \
		"$((A_HWM / 1024))" "$((A_PEAK / 1024))"
	printf '                            the runner log says: peak memory %s\n' "$(runner_peak "$A_RUN")"
	printf 'task child peak memory (c): VmHWM %d MB resident, VmPeak %d MB address space (0 = ended before a sample)\n' \
		"$((C_HWM / 1024))" "$((C_PEAK / 1024))"
	printf '                            the runner log says: peak memory %s\n' "$(runner_peak "$C_RUN")"
} | tee "$OUT"
echo "saved to $OUT"
