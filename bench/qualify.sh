#!/usr/bin/env bash
# bench/qualify.sh - the qualify task of a jdbc incremental_with_qualify job:
# its time after a small increment, as the destination grows.
#
#   SLUICE_PORT=42443 bench/qualify.sh
#
# Starts the `bench` instance (its own MariaDB, the source MariaDB on port + 1,
# sluice serve + work).  For each size in SIZES it fills a source table, runs
# the pipeline once (a full load, then the qualify task over the whole
# table), then ROUNDS times changes INCREMENT source rows (half updates of
# existing keys spread over the table, half new keys) and runs it again.
# The qualify figure is the qualify task's own duration_ms from
# GET /platform/pipeline_run/{run_id}; beside it the extract_load task of
# the same run (it reads the same increment) as an anchor measured in the
# same run.  Each run is checked: one row per key, as many as the source.
# Prints the per-round figures and their medians and saves the output to
# bench/results/qualify-<date>.txt.  The instance is stopped at the end.
#
# Environment: SIZES ("200000 2000000"), INCREMENT (1000), ROUNDS (3),
# SLUICE_PORT (28443).
set -euo pipefail

ROOT=$(dirname "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")")
SIZES=${SIZES:-200000 2000000}
INCREMENT=${INCREMENT:-1000}
ROUNDS=${ROUNDS:-3}
for n in $SIZES $INCREMENT $ROUNDS; do
	[[ $n =~ ^[1-9][0-9]*$ ]] || { echo "SIZES, INCREMENT and ROUNDS must be positive numbers" >&2; exit 2; }
done

export SLUICE_INSTANCE=bench
export SLUICE_PORT=${SLUICE_PORT:-28443}
DEV=$ROOT/scripts/dev
RESULTS=$ROOT/bench/results
OUT=$RESULTS/qualify-$(date -u +%Y%m%d-%H%M%S).txt
TMP=$(mktemp -d)

# shellcheck source=bench/lib/instance.sh
. "$ROOT/bench/lib/instance.sh"
bench_instance_up bench/qualify.sh

bench_platform_client

# Execute, wait for the end (bounded), print "run_s extract_ms qualify_ms rows".
run_pipeline() {
	local pid=$1 run out deadline=$((SECONDS + 3600))
	run=$(api POST /platform/pipeline/execute "{\"pipeline_id\":\"$pid\",\"customer_id\":\"$SLUICE_DEMO_CUSTOMER_ID\"}" |
		jget data.run_id)
	while :; do
		api GET "/platform/pipeline_run/$run" >"$TMP/run.json"
		out=$(python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))["data"]
if r["status"] in ("SUCCESS", "FAILED", "CANCELLED"):
    t = {x["kind"]: x["duration_ms"] for x in r["tasks"]}
    print(r["status"], r["duration_ms"] / 1000, t.get("extract_load"), t.get("qualify"), r["rows_loaded"])
' "$TMP/run.json")
		[[ -n $out ]] && break
		((SECONDS < deadline)) || { echo "bench/qualify.sh: run $run did not end" >&2; exit 1; }
		sleep 0.2
	done
	set -- $out
	if [[ $1 != SUCCESS ]]; then
		echo "bench/qualify.sh: run $run $1" >&2
		api GET "/platform/pipeline/pipeline_run/$run/logs" >&2
		exit 1
	fi
	echo "$2 $3 $4 $5"
}

CID=$(api POST /platform/connections "{\"name\":\"bench-qualify-$$\",\"plugin\":\"mariadb\",
	\"host\":\"127.0.0.1\",\"port\":$SLUICE_SOURCE_PORT,\"database\":\"source\",
	\"user\":\"source\",\"password\":\"$SLUICE_SOURCE_PASSWORD\"}" | jget connection_id)
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }

REPORT=$TMP/report
: >"$REPORT"
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
for size in $SIZES; do
	t=bq_$size
	echo "filling source table $t with $size rows..."
	src "DROP TABLE IF EXISTS $t;
	CREATE TABLE $t (
		id BIGINT NOT NULL PRIMARY KEY,
		customer_id INT NOT NULL,
		name VARCHAR(64) NOT NULL,
		amount DECIMAL(12,2) NOT NULL,
		note VARCHAR(255) NULL,
		updated_at DATETIME(6) NOT NULL,
		KEY ${t}_updated (updated_at)
	);
	INSERT INTO $t SELECT seq, seq % 9973, CONCAT('customer name ', seq), (seq % 100000) / 100,
		IF(seq % 5 = 0, NULL, CONCAT('a note about order ', seq, ' that is of a usual length')),
		'2024-01-01' + INTERVAL seq SECOND
	FROM seq_1_to_$size;
	ANALYZE TABLE $t;" >/dev/null
	# the physical database of the logical schema `bench` (warehouse.h)
	WHDB=wh_bench_$(printf '%s\n%s' "$SLUICE_DEMO_CUSTOMER_ID" bench | sha256sum | cut -c1-16)
	wh "DROP TABLE IF EXISTS \`$WHDB\`.q_$size"
	pid=$(api POST /platform/pipeline "{\"name\":\"bench qualify $size\",\"cron\":null,\"jobs\":[{\"input\":{
		\"connector\":\"jdbc\",\"plugin\":\"mariadb\",\"connection_id\":\"$CID\",
		\"table_name\":\"$t\",\"load_type\":\"incremental_with_qualify\",
		\"incremental_column_name\":\"updated_at\",\"incremental_column_type\":\"datetime\",
		\"primary_keys\":[\"id\"]},
		\"output\":{\"plugin\":\"mariadb\",\"raw\":{\"table_schema\":\"bench\",\"table_name\":\"q_$size\"}}}]}" |
		jget pipeline_id)
	echo "first run (full load of $size rows, then qualify)..."
	read -r f_run f_ext f_qual f_rows < <(run_pipeline "$pid")
	printf '%8d rows  first run %8.2f s: extract_load %8d ms, qualify %8d ms (rows_loaded %s)\n' \
		"$size" "$f_run" "$f_ext" "$f_qual" "$f_rows" | tee -a "$REPORT"
	quals=() exts=()
	next=$((size + 1))
	for ((r = 1; r <= ROUNDS; r++)); do
		upd=$((INCREMENT / 2)) new=$((INCREMENT - INCREMENT / 2))
		step=$((size / upd))
		# updates spread over the whole key range, then new keys; all later
		# than any value loaded so far
		src "UPDATE $t SET amount = amount + 1, name = CONCAT('updated ', id, ' round $r'),
			updated_at = '2030-01-01' + INTERVAL ($r * 100) DAY + INTERVAL id SECOND
			WHERE id IN (SELECT seq * $step - $r FROM seq_1_to_$upd);
		INSERT INTO $t SELECT seq, seq % 9973, CONCAT('new ', seq), 1, NULL,
			'2030-01-01' + INTERVAL ($r * 100) DAY + INTERVAL seq SECOND
		FROM seq_${next}_to_$((next + new - 1))" >/dev/null
		next=$((next + new))
		read -r i_run i_ext i_qual i_rows < <(run_pipeline "$pid")
		[[ $i_rows == "$INCREMENT" ]] || { echo "bench/qualify.sh: the increment loaded $i_rows rows, not $INCREMENT" >&2; exit 1; }
		want=$(src "SELECT COUNT(*) FROM $t")
		got=$(wh "SELECT CONCAT(COUNT(*), ' ', COUNT(DISTINCT id)) FROM \`$WHDB\`.q_$size")
		[[ $got == "$want $want" ]] || { echo "bench/qualify.sh: destination has $got rows/keys, the source $want" >&2; exit 1; }
		printf '%8d rows  increment %d of %d rows: run %6.2f s, extract_load %6d ms, qualify %6d ms\n' \
			"$size" "$r" "$INCREMENT" "$i_run" "$i_ext" "$i_qual" | tee -a "$REPORT"
		quals+=("$i_qual") exts+=("$i_ext")
	done
	mq=$(median "${quals[@]}") me=$(median "${exts[@]}")
	printf '%8d rows  MEDIAN qualify %d ms, extract_load %d ms, qualify / extract_load %.2f\n' \
		"$size" "$mq" "$me" "$(echo "$mq / $me" | bc -l)" | tee -a "$REPORT"
	src "DROP TABLE $t" >/dev/null
done

mkdir -p "$RESULTS"
{
	echo "bench/qualify.sh  $(date -u +%Y-%m-%dT%H:%M:%SZ)  $(uname -n)  $(nproc) CPUs (shared with other engineers' runs: absolute times are noisy)"
	echo "command: SLUICE_PORT=$SLUICE_PORT SIZES=\"$SIZES\" INCREMENT=$INCREMENT ROUNDS=$ROUNDS bench/qualify.sh"
	echo "code: $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$ROOT" diff --quiet HEAD -- src 2>/dev/null || echo ' + uncommitted changes')"
	echo "load average (1, 5, 15 min) at the start: $LOAD_START, at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "increment: $((INCREMENT / 2)) updates of existing keys spread over the table + $((INCREMENT - INCREMENT / 2)) new keys"
	echo
	cat "$REPORT"
} | tee "$OUT"
echo "saved to $OUT"
