#!/usr/bin/env bash
# bench/parquet.sh - the Parquet row reader's speed and memory, in one run:
#
#   A file of ROWS rows and 8 columns (integers, repeated and distinct
#   text, a decimal, a double, a boolean, a date, a timestamp; a null in
#   every column now and then) is written by DuckDB in three ways: its
#   default (data pages v1, SNAPPY, dictionary and PLAIN values), ZSTD, and
#   data pages v2 (DELTA_BINARY_PACKED, DELTA_LENGTH_BYTE_ARRAY,
#   BYTE_STREAM_SPLIT).  Each is then read ROUNDS times, one core each
#   (taskset -c CORE):
#
#     sluice  bench/parquet_read.c: tab_read with a sink touching every cell
#             (the text a table load takes), its seconds and peak RSS;
#     DuckDB  COPY (SELECT * FROM read_parquet(file)) TO '/dev/null' as CSV,
#             threads = 1: every value decoded and written as text.
#
#   Medians of the rounds, rows/s, and sluice / DuckDB (speed).  The peak
#   RSS of the sluice reader against the file's size shows the bound: pages,
#   not files, are held.
#
# Needs a build (scripts/dev build) and npm (DuckDB's @duckdb/node-api is
# installed under var/bench-tools/, never committed).  Results go to stdout
# and bench/results/parquet-<date>.txt.
#
# Environment: ROWS (2000000), ROUNDS (5), CORE (0), SLUICE_BUILD (build).
set -euo pipefail

ROOT=$(dirname "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")")
ROWS=${ROWS:-2000000}
ROUNDS=${ROUNDS:-5}
CORE=${CORE:-0}
BUILD=${SLUICE_BUILD:-$ROOT/build}
[[ $ROWS =~ ^[1-9][0-9]*$ ]] || { echo "ROWS must be a positive number" >&2; exit 2; }
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || { echo "ROUNDS must be a positive number" >&2; exit 2; }
[[ -f $BUILD/libsluice.a ]] || { echo "no $BUILD/libsluice.a: run scripts/dev build" >&2; exit 1; }

DATA=$ROOT/var/bench-data
TOOLS=$ROOT/var/bench-tools
RESULTS=$ROOT/bench/results
OUT=$RESULTS/parquet-$(date -u +%Y%m%d-%H%M%S).txt
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$RESULTS" "$DATA" "$TOOLS"
exec > >(tee "$OUT") 2>&1

median() { printf '%s\n' "$@" | sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }

echo "bench/parquet.sh $(date -u +%FT%TZ) ROWS=$ROWS ROUNDS=$ROUNDS CORE=$CORE"
echo "$(uname -srm); $(nproc) CPUs; $(git -C "$ROOT" rev-parse --short HEAD)"

DUCK=$TOOLS/duckdb
. "$ROOT/bench/lib/duckdb.sh"
duckdb_install "$DUCK"
echo "DuckDB @duckdb/node-api $DUCK_VERSION"

cc -std=gnu11 -O2 -I"$ROOT/src" -o "$TMP/parquet_read" "$ROOT/bench/parquet_read.c" \
	"$BUILD/libsluice.a" $(pkg-config --libs libzip expat freexl zlib libzstd json-c) \
	-lsnappy -lcrypto -lm

cat >"$DUCK/parquet_bench.mjs" <<'JS'
// write ROWS rows to OUT as Parquet (mode: default | zstd | v2), or read
// FILE whole as text ("read"): prints seconds.
import { DuckDBInstance } from '@duckdb/node-api';
const [mode, file, rows] = process.argv.slice(2);
const inst = await DuckDBInstance.create(':memory:', { threads: '1' });
const con = await inst.connect();
const f = file.replaceAll("'", "''");
if (mode === 'read') {
	const t0 = performance.now();
	await con.run(`COPY (SELECT * FROM read_parquet('${f}')) TO '/dev/null' (FORMAT csv)`);
	console.log(((performance.now() - t0) / 1000).toFixed(3));
} else {
	const opts = { default: '', zstd: ', COMPRESSION zstd', v2: ', PARQUET_VERSION v2' }[mode];
	await con.run(`COPY (SELECT
		r AS id,
		CASE WHEN r % 17 = 0 THEN NULL ELSE ['north', 'south', 'east', 'west'][r % 4 + 1] END AS region,
		'item-' || md5(CAST(r AS VARCHAR)) AS sku,
		CAST(r % 100000 * 0.01 AS DECIMAL(12,2)) AS amount,
		CASE WHEN r % 23 = 0 THEN NULL ELSE r / 7 END AS price,
		r % 3 = 0 AS flag,
		DATE '2000-01-01' + CAST(r % 9000 AS INTEGER) AS day,
		TIMESTAMP '2020-01-01' + to_seconds(r) AS at
		FROM range(${rows}) t(r)) TO '${f}' (FORMAT parquet${opts})`);
}
JS

for mode in default zstd v2; do
	file=$DATA/parquet-$mode-$ROWS.parquet
	[[ -f $file ]] || (cd "$DUCK" && node parquet_bench.mjs "$mode" "$file" "$ROWS")
	size=$(stat -c %s "$file")
	ours=() duck=() rss=()
	cat "$file" >/dev/null                    # from the page cache from now on
	for ((i = 1; i <= ROUNDS; i++)); do
		read -r s rows cells bytes kb < <(taskset -c "$CORE" "$TMP/parquet_read" "$file")
		ours+=("$s")
		rss+=("$kb")
		d=$(cd "$DUCK" && taskset -c "$CORE" node parquet_bench.mjs read "$file")
		duck+=("$d")
	done
	o=$(median "${ours[@]}")
	d=$(median "${duck[@]}")
	echo
	echo "== $mode: $(basename "$file"), $size bytes, $rows rows, $cells cells ($bytes bytes of text)"
	echo "sluice rounds (s): ${ours[*]}"
	echo "DuckDB rounds (s): ${duck[*]}"
	awk -v o="$o" -v d="$d" -v r="$rows" -v kb="$(median "${rss[@]}")" -v sz="$size" 'BEGIN {
		printf "median: sluice %.3f s (%.0f rows/s), DuckDB %.3f s (%.0f rows/s); sluice / DuckDB = %.2f\n",
			o, r / o, d, r / d, d / o
		printf "sluice peak RSS %d kB for a %.1f MB file\n", kb, sz / 1e6 }'
done
echo
echo "results in ${OUT#"$ROOT"/}"
