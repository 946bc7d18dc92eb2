#!/usr/bin/env bash
# bench/infer_corpus.sh - schema inference on real CSV files written by other
# programs (R, Python, Stata, MATLAB, Stan, GDAL, ... as Debian packages
# ship them), compared with DuckDB's CSV sniffer:
#
#   1. the packages named in bench/corpus/csv-files.tsv are downloaded with
#      apt-get download (the listed version, else the archive's) into
#      var/bench-corpus/ and unpacked there; each listed file is checked
#      against its SHA-256 (a file that differs is left out and said so);
#   2. DuckDB (@duckdb/node-api, installed under var/bench-tools/) reads
#      each file with read_csv's defaults: names, types, count(*); and again
#      with nullstr set to sluice's default missing-value markers, to show
#      what the one deliberate difference (NA and friends are NULL in a
#      typed column) accounts for;
#   3. sluice: every file is uploaded through the API of the bench instance
#      (POST /storage-explorer/storage/upload, 20 files a request) and its
#      schema read with GET /storage-explorer/datasets/{id} once ready
#      (MODE=infer reads them with `sluice infer` instead, no stack);
#   4. bench/lib/infer_compare.mjs prints the three figures: column type
#      agreement (INTEGER/BIGINT alike, DECIMAL/DOUBLE alike), exact row
#      count, column name agreement; then every disagreement.
#
# Results go to stdout and bench/results/infer-corpus-<date>.txt.  The bench
# instance (scripts/dev up bench) is stopped at the end.
#
# Environment: MODE (api | infer), SLUICE_PORT (the bench instance's https
# port, default 28443).
set -euo pipefail

ROOT=$(dirname "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")")
MODE=${MODE:-api}
[[ $MODE == api || $MODE == infer ]] || { echo "MODE is api or infer" >&2; exit 2; }

export SLUICE_INSTANCE=bench
DEV=$ROOT/scripts/dev
MANIFEST=$ROOT/bench/corpus/csv-files.tsv
CORPUS=$ROOT/var/bench-corpus
TOOLS=$ROOT/var/bench-tools
DUCK=$TOOLS/duckdb
RESULTS=$ROOT/bench/results
OUT=$RESULTS/infer-corpus-$(date -u +%Y%m%d-%H%M%S).txt
MARKERS='["", "NA", "N/A", "NULL", "."]'
TMP=$(mktemp -d)
STARTED=0

cleanup() {
	if ((STARTED)); then
		"$DEV" down bench >/dev/null 2>&1 || echo "bench/infer_corpus.sh: could not stop the bench instance" >&2
	fi
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

mkdir -p "$RESULTS" "$CORPUS/debs" "$CORPUS/root" "$DUCK"
exec > >(tee "$OUT") 2>&1

echo "bench/infer_corpus.sh  $(date -u +%FT%TZ)  MODE=$MODE  $(nproc) CPUs, $(uname -r)"

# --- 1. the corpus ----------------------------------------------------------------
echo "building..."
"$DEV" build >"$TMP/build.log" 2>&1 || { cat "$TMP/build.log"; exit 1; }
BIN=$ROOT/build/sluice

grep -v '^#' "$MANIFEST" | cut -f1,2 | sort -u >"$TMP/packages"
while IFS=$'\t' read -r pkg ver; do
	[[ -d $CORPUS/root/$pkg ]] && continue
	(cd "$CORPUS/debs" && { apt-get download -qq "$pkg=$ver" 2>/dev/null ||
	                        apt-get download -qq "$pkg"; }) >/dev/null 2>&1 ||
		{ echo "bench/infer_corpus.sh: apt-get download $pkg failed (run apt-get update?)" >&2; exit 1; }
	deb=$(ls -t "$CORPUS/debs/${pkg}"_*.deb | head -n1)
	mkdir -p "$CORPUS/root/$pkg.tmp"
	dpkg-deb -x "$deb" "$CORPUS/root/$pkg.tmp"
	mv "$CORPUS/root/$pkg.tmp" "$CORPUS/root/$pkg"
done <"$TMP/packages"

n=0 bad=0
: >"$TMP/files"                          # path, folder, upload name
while IFS=$'\t' read -r pkg ver path sum; do
	f=$CORPUS/root/$pkg$path
	if [[ ! -f $f ]] || [[ $(sha256sum "$f" | cut -d' ' -f1) != "$sum" ]]; then
		echo "left out (missing or changed since the manifest): $pkg $path"
		bad=$((bad + 1))
		continue
	fi
	n=$((n + 1))
	printf '%s\t%s\t%04d-%s\n' "$f" "corpus/$pkg" "$n" "$(basename "$path")" >>"$TMP/files"
done < <(grep -v '^#' "$MANIFEST")
echo "corpus: $n files from $(wc -l <"$TMP/packages") packages ($bad left out)"
cut -f1 "$TMP/files" >"$TMP/paths"

# --- 2. DuckDB ---------------------------------------------------------------------
. "$ROOT/bench/lib/duckdb.sh"
duckdb_install "$DUCK"
cp "$ROOT/bench/lib/duckdb_schema.mjs" "$DUCK/"
echo "DuckDB $DUCK_VERSION: read_csv of every file..."
node "$DUCK/duckdb_schema.mjs" <"$TMP/paths" >"$TMP/duck.jsonl"
DUCK_NULLSTR=$MARKERS node "$DUCK/duckdb_schema.mjs" <"$TMP/paths" >"$TMP/duck-nullstr.jsonl"

# --- 3. sluice ---------------------------------------------------------------------
t0=$(date +%s.%N)
if [[ $MODE == api ]]; then
	"$DEV" down bench >/dev/null 2>&1 || true
	STARTED=1
	"$DEV" up bench >"$TMP/up.log" 2>&1 || { cat "$TMP/up.log"; echo "bench/infer_corpus.sh: scripts/dev up bench failed" >&2; exit 1; }
	eval "$("$DEV" env bench)"
	TOKEN=$("$SLUICE_BIN" token -c "$SLUICE_CONF" --customer demo \
		--permissions STORAGE_EXPLORER.READ,STORAGE_EXPLORER.WRITE)
	echo "sluice: uploading through $SLUICE_URL and reading each dataset's schema..."
	NODE_NO_WARNINGS=1 node "$ROOT/bench/lib/sluice_api_schemas.mjs" "$SLUICE_URL" "$TOKEN" \
		<"$TMP/files" >"$TMP/ours.jsonl"
else
	echo "sluice: sluice infer of every file..."
	node "$ROOT/bench/lib/sluice_infer.mjs" "$BIN" <"$TMP/paths" >"$TMP/ours.jsonl"
fi
t1=$(date +%s.%N)
echo "sluice: $(wc -l <"$TMP/ours.jsonl") schemas in $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s"

# --- 4. the figures ------------------------------------------------------------------
echo
echo "== against DuckDB $DUCK_VERSION read_csv defaults"
node "$ROOT/bench/lib/infer_compare.mjs" "$TMP/duck.jsonl" "$TMP/ours.jsonl" "$CORPUS/root/" |
	sed "s|$CORPUS/root/||g" | tee "$TMP/cmp.txt" | sed -n 1,4p
echo
echo "== against DuckDB with nullstr = $MARKERS (sluice's default markers)"
node "$ROOT/bench/lib/infer_compare.mjs" "$TMP/duck-nullstr.jsonl" "$TMP/ours.jsonl" "$CORPUS/root/" | sed -n 1,4p
echo
echo "== the disagreements with read_csv defaults, file by file"
sed -n '5,$p' "$TMP/cmp.txt"
echo
echo "saved to ${OUT#"$ROOT"/}"
