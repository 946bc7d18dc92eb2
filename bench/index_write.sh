#!/usr/bin/env bash
# bench/index_write.sh - the index file's writer of this tree against
# BASE's (a commit), alone in a process: each build writes the index of N
# snippets shaped as the ingestion curve of bench/retrieval_service.sh
# posts them (one-snippet documents, or documents of each of PER_DOC
# snippets), REPS times, ROUNDS times alternated; per shape, the median of
# each build's medians, their ratio, and whether the two files are the same
# bytes (a change of the writer's speed must not change the file).
#
# The text is the retrieval benches' (/usr/share/common-licenses and the
# copyright files under /usr/share/doc).  The file is written in TMPDIR
# (default /tmp): put it on the disk the index files live on.
#
# Environment: BASE (35fab34, the writer before its BM25 sections were
# written from the indexes' own memory), N ("10000 100000"), PER_DOC ("1 5"),
# ROUNDS (5), REPS (3), CC (cc).
#   bench/index_write.sh | tee bench/results/index-write-<date>.txt
set -euo pipefail

ROOT=$(dirname "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")")
BASE=${BASE:-35fab34}
N=${N:-10000 100000}
PER_DOC=${PER_DOC:-1 5}
ROUNDS=${ROUNDS:-5}
REPS=${REPS:-3}
CC=${CC:-cc}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# shellcheck source=bench/lib/ab.sh
. "$ROOT/bench/lib/ab.sh"

build() {                # build OUT SRC: with every file the index writer links, in either tree
	ab_build "$1" "$2" "$ROOT/bench/index_write.c" \
		retrieval/{vec,vec_codes,tokenize,bm25,index,title} util/{thread,pages}
}
mkdir -p "$TMP/base"
git -C "$ROOT" archive "$BASE" src | tar -x -C "$TMP"/base
build "$TMP/write-tree" "$ROOT/src"
build "$TMP/write-base" "$TMP/base/src"

ab_text | head -c 8000000 >"$TMP/text.txt"

echo "== index_write: this tree $(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet -- src || echo +changes), base $BASE, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
write() {                # write tree|base: one run of the shape $n, $g
	"$TMP/write-$1" "$TMP/text.txt" "$n" "$g" "$REPS" "$TMP/$1.idx"
}
for n in $N; do
	for g in $PER_DOC; do
		ab_rounds "$n snippets in documents of $g" ms "the files" write
	done
done
