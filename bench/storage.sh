#!/usr/bin/env bash
# bench/storage.sh - storage explorer speed, in one run:
#
#   1. schema inference of a generated CSV of SIZE_MB (default 500) MB by
#      `sluice infer`, pinned to one core: MB/s, with the rows classified
#      (analyzed_rows) and counted (row_count);
#   2. the same file through DuckDB's read_csv (sniffing, type detection and
#      an exact count(*)), one thread on the same core, from the
#      @duckdb/node-api npm package installed under var/bench-tools/: MB/s
#      and our speed over DuckDB's;
#   3. downloads of that file over HTTPS: GET /storage-explorer/storage/download
#      (the app checks the token and path, nginx sends the file after
#      X-Accel-Redirect) against nginx serving the same file from a static
#      location (/_bench/files/): MB/s of one stream each, alternating which
#      goes first, median and best of DL_ROUNDS, and the ratios; then
#      requests/s of a 1 MiB file with CONNECTIONS concurrent clients (wrk).
#
# The file is read from the page cache (each measurement is preceded by a
# warm-up read).  Results go to stdout and bench/results/storage-<date>.txt.
# The bench instance (scripts/dev up bench) is stopped at the end.
#
# Environment: SIZE_MB (500), ROUNDS (3), DL_ROUNDS (5, downloads), CORE (0,
# for taskset), SLUICE_PORT
# (the bench instance's https port, default 28443), CONNECTIONS (8), THREADS
# (2), DURATION (5s).
set -euo pipefail

ROOT=$(dirname "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")")
SIZE_MB=${SIZE_MB:-500}
ROUNDS=${ROUNDS:-3}
DL_ROUNDS=${DL_ROUNDS:-5}
CORE=${CORE:-0}
CONNECTIONS=${CONNECTIONS:-8}
THREADS=${THREADS:-2}
DURATION=${DURATION:-5s}
[[ $DURATION =~ ^[0-9]+$ ]] && DURATION=${DURATION}s
[[ $SIZE_MB =~ ^[1-9][0-9]*$ ]] || { echo "SIZE_MB must be a positive number" >&2; exit 2; }
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || { echo "ROUNDS must be a positive number" >&2; exit 2; }

export SLUICE_INSTANCE=bench
DEV=$ROOT/scripts/dev
DATA=$ROOT/var/bench-data
TOOLS=$ROOT/var/bench-tools
CSV=$DATA/storage-${SIZE_MB}mb.csv
RESULTS=$ROOT/bench/results
OUT=$RESULTS/storage-$(date -u +%Y%m%d-%H%M%S).txt
TMP=$(mktemp -d)
STARTED=0

cleanup() {
	if ((STARTED)); then
		"$DEV" down bench >/dev/null 2>&1 || echo "bench/storage.sh: could not stop the bench instance" >&2
	fi
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

mkdir -p "$RESULTS" "$DATA" "$TOOLS"
exec > >(tee "$OUT") 2>&1

median() {
	printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 }
		END { if (NR % 2) printf "%.1f", v[(NR + 1) / 2]
		      else printf "%.1f", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
rat() { awk -v n="$1" -v d="$2" 'BEGIN { printf "%.2f", (d > 0) ? n / d : 0 }'; }
now() { date +%s.%N; }
mbps() { awk -v b="$1" -v s="$2" 'BEGIN { printf "%.1f", (s > 0) ? b / 1e6 / s : 0 }'; }

echo "bench/storage.sh  $(date -u +%FT%TZ)  $(nproc) CPUs, $(uname -r)"
echo "cpu: $(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)"

# --- the binary and the data ------------------------------------------------------
echo "building..."
"$DEV" build
BIN=$ROOT/build/sluice

# Deterministic rows (~110 bytes): quoted fields with commas and doubled
# quotes, every inferred type.  Made once and kept in var/bench-data/.
if [[ ! -s $CSV || $(stat -c %s "$CSV") -lt $((SIZE_MB * 1000000)) ]]; then
	echo "generating ${CSV#"$ROOT"/} ($SIZE_MB MB)..."
	awk -v target=$((SIZE_MB * 1000000)) 'BEGIN {
		srand(42)
		split("Oslo|Zürich, CH|São Paulo|Kraków|New York, NY|Malmö|Lyon", city, "|")
		print "id,name,city,amount,ratio,active,born,updated,big,code,note"
		n = 0; size = 0
		while (size < target) {
			n++
			line = sprintf("%d,\"Customer %d\",\"%s\",%d.%02d,%.3e,%s,19%02d-%02d-%02d,2024-%02d-%02d %02d:%02d:%02d,%d,%05d,\"note, \"\"%d\"\"\"",
				n, n % 100003, city[n % 7 + 1], int(rand() * 1000000), n % 100,
				rand() * 1000, (n % 2) ? "true" : "false", n % 100, n % 12 + 1, n % 28 + 1,
				n % 12 + 1, n % 28 + 1, n % 24, n % 60, (n * 7) % 60,
				3000000000 + n, n % 100000, n)
			print line
			size += length(line) + 1
		}
	}' >"$CSV.tmp"
	mv "$CSV.tmp" "$CSV"
fi
BYTES=$(stat -c %s "$CSV")
echo "file: ${CSV#"$ROOT"/}, $BYTES bytes"
cat "$CSV" >/dev/null                       # into the page cache

# --- 1. our inference, one core ---------------------------------------------------
echo
echo "== 1. sluice infer, one core (taskset -c $CORE)"
ours=()
for ((i = 1; i <= ROUNDS; i++)); do
	t0=$(now)
	taskset -c "$CORE" "$BIN" infer "$CSV" >"$TMP/schema.json" 2>"$TMP/infer.err"
	t1=$(now)
	s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
	r=$(mbps "$BYTES" "$s")
	ours+=("$r")
	echo "round $i: ${s}s  $r MB/s"
done
rows=$(sed -n 's/.*"row_count": \([0-9]*\).*/\1/p' "$TMP/schema.json")
analyzed=$(sed -n 's/.*"analyzed_rows": \([0-9]*\).*/\1/p' "$TMP/schema.json")
types=$(awk -F'"' '/"name"/ { n = $4 } /"inferred_type"/ { printf "%s%s:%s", sep, n, $4; sep = " " }' "$TMP/schema.json")
echo "detected: $(cat "$TMP/infer.err")"
echo "schema: $types"
OURS=$(median "${ours[@]}")
echo "median: $OURS MB/s (row_count $rows exact, analyzed_rows $analyzed)"

# --- 2. DuckDB read_csv, one thread on the same core ---------------------------------
echo
echo "== 2. DuckDB read_csv (count(*), threads = 1, taskset -c $CORE)"
DUCK=$TOOLS/duckdb
. "$ROOT/bench/lib/duckdb.sh"
duckdb_install "$DUCK"
cat >"$DUCK/read_csv.mjs" <<'EOF'
// One read_csv of the file: DuckDB sniffs the dialect, detects the types and
// counts every row; prints "seconds rows" and the detected types.
import { DuckDBInstance } from '@duckdb/node-api';
const file = process.argv[2].replaceAll("'", "''");
const inst = await DuckDBInstance.create(':memory:', { threads: '1' });
const con = await inst.connect();
const t0 = performance.now();
const r = await con.runAndReadAll(`SELECT count(*) FROM read_csv('${file}')`);
const t1 = performance.now();
const d = await con.runAndReadAll(`DESCRIBE SELECT * FROM read_csv('${file}')`);
console.log(((t1 - t0) / 1000).toFixed(3), String(r.getRows()[0][0]));
console.log(d.getRows().map((c) => `${c[0]}:${c[1]}`).join(' '));
EOF
duck=()
for ((i = 1; i <= ROUNDS; i++)); do
	(cd "$DUCK" && taskset -c "$CORE" node read_csv.mjs "$CSV") >"$TMP/duck.out"
	read -r s drows <"$TMP/duck.out"
	r=$(mbps "$BYTES" "$s")
	duck+=("$r")
	echo "round $i: ${s}s  $r MB/s  ($drows rows)"
done
echo "DuckDB $DUCK_VERSION types: $(sed -n 2p "$TMP/duck.out")"
DUCKM=$(median "${duck[@]}")
echo "median: $DUCKM MB/s; sluice / DuckDB = $(rat "$OURS" "$DUCKM")"

# --- 3. downloads --------------------------------------------------------------------
echo
echo "== 3. downloads: X-Accel-Redirect vs static, same nginx, same file"
"$DEV" down bench >/dev/null 2>&1 || true
STARTED=1
if ! "$DEV" up bench >"$TMP/up.log" 2>&1; then
	cat "$TMP/up.log"
	echo "bench/storage.sh: scripts/dev up bench failed" >&2
	exit 1
fi
eval "$("$DEV" env bench)"
TOKEN=$("$SLUICE_BIN" token -c "$SLUICE_CONF" --customer demo --permissions STORAGE_EXPLORER.READ)
CUST=$SLUICE_DEMO_CUSTOMER_ID
# The same inode in both places: the customer's storage area and the static
# folder (hard links, so the page cache is shared too).
mkdir -p "$SLUICE_VAR/storage/customers/$CUST/bench" "$SLUICE_VAR/bench-files"
ln -f "$CSV" "$SLUICE_VAR/storage/customers/$CUST/bench/big.csv"
ln -f "$CSV" "$SLUICE_VAR/bench-files/big.csv"
head -c 1048576 "$CSV" >"$SLUICE_VAR/bench-files/small.csv"
ln -f "$SLUICE_VAR/bench-files/small.csv" "$SLUICE_VAR/storage/customers/$CUST/bench/small.csv"
chmod -R a+rX "$SLUICE_VAR/storage/customers" "$SLUICE_VAR/bench-files"
APP="$SLUICE_URL/storage-explorer/storage/download?file_path=bench/big.csv"
STATIC="$SLUICE_URL/_bench/files/big.csv"

fetch() { # url [header] -> "MB/s status bytes"
	curl -sk -o /dev/null ${2:+-H "$2"} -w '%{speed_download} %{http_code} %{size_download}\n' "$1"
}
check() { # url header: a 200 of the whole file, or fail
	local out
	out=$(fetch "$1" "${2:-}")
	set -- $out
	[[ $2 == 200 && $3 == "$BYTES" ]] || { echo "bench/storage.sh: download answered $2 with $3 bytes" >&2; exit 1; }
}
check "$APP" "Authorization: Bearer $TOKEN"
check "$STATIC"
# Alternate which goes first: other load on the machine hits both alike.
app=() static=()
for ((i = 1; i <= DL_ROUNDS; i++)); do
	for which in $( ((i % 2)) && echo "static app" || echo "app static"); do
		if [[ $which == static ]]; then
			set -- $(fetch "$STATIC")
			s=$(awk -v b="$1" 'BEGIN { printf "%.1f", b / 1e6 }')
			static+=("$s")
		else
			set -- $(fetch "$APP" "Authorization: Bearer $TOKEN")
			a=$(awk -v b="$1" 'BEGIN { printf "%.1f", b / 1e6 }')
			app+=("$a")
		fi
	done
	echo "round $i: static $s MB/s, X-Accel-Redirect $a MB/s"
done
APPM=$(median "${app[@]}")
STATM=$(median "${static[@]}")
APPB=$(printf '%s\n' "${app[@]}" | sort -g | tail -n1)
STATB=$(printf '%s\n' "${static[@]}" | sort -g | tail -n1)
echo "one stream of $BYTES bytes: median static $STATM MB/s, X-Accel-Redirect $APPM MB/s," \
	"ratio $(rat "$APPM" "$STATM"); best static $STATB, X-Accel-Redirect $APPB, ratio $(rat "$APPB" "$STATB")"

if command -v wrk >/dev/null 2>&1; then
	. "$ROOT/bench/lib/wrk.sh"
	set -- $(run_wrk "$SLUICE_URL/_bench/files/small.csv" "$DURATION")
	srps=$1 sp99=$2 serr=$3
	set -- $(run_wrk "$SLUICE_URL/storage-explorer/storage/download?file_path=bench/small.csv" \
		"$DURATION" -H "Authorization: Bearer $TOKEN")
	arps=$1 ap99=$2 aerr=$3
	echo "1 MiB file, $CONNECTIONS connections, $DURATION: static $srps req/s (p99 ${sp99} ms, errors $serr)," \
		"X-Accel-Redirect $arps req/s (p99 ${ap99} ms, errors $aerr); ratio $(rat "$arps" "$srps")"
fi

echo
echo "summary: inference $OURS MB/s (one core; analyzed_rows $analyzed of $rows rows);" \
	"DuckDB read_csv $DUCKM MB/s (ratio $(rat "$OURS" "$DUCKM")); download X-Accel-Redirect" \
	"$APPM MB/s vs static $STATM MB/s (median ratio $(rat "$APPM" "$STATM"), best-of ratio" \
	"$(rat "$APPB" "$STATB"))"
echo "saved to ${OUT#"$ROOT"/}"
