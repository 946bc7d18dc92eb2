#!/usr/bin/env bash
# bench/vec_questions.sh - the exact vector top-k of real questions over an
# index file of real text (bench/vec_questions.c), this tree against BASE
# (a commit), each alone in a process, ROUNDS times alternated: the pass a
# question makes with hybrid and MMR off, without the service around it.
#
# The index holds about SNIPPETS snippets of the retrieval benches' text
# (/usr/share/common-licenses and the copyright files under /usr/share/doc)
# repeated as bench/retrieval_service.sh repeats it, written once by this
# tree; both builds read it (so BASE must read this tree's index version).
# Each round asks QUESTIONS lines of the text, REPS times.  Per round and
# build: the median time a question, the rows scored exactly from the
# floats, and a checksum of the hits, which must be the same for both
# builds (a change of the pass's speed must not change its answers).
#
# Environment: BASE (7781115, the pass before its runs of rows), SNIPPETS
# (80000: about 105,000 rows, the service bench's), QUESTIONS (2000),
# ROUNDS (5), REPS (3), CC (cc).
#   bench/vec_questions.sh | tee bench/results/vec-questions-<date>.txt
set -euo pipefail

ROOT=$(dirname "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")")
BASE=${BASE:-7781115}
SNIPPETS=${SNIPPETS:-80000}
QUESTIONS=${QUESTIONS:-2000}
ROUNDS=${ROUNDS:-5}
REPS=${REPS:-3}
CC=${CC:-cc}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# shellcheck source=bench/lib/ab.sh
. "$ROOT/bench/lib/ab.sh"

build() {                # build OUT SRC: with every file the program links, in either tree
	ab_build "$1" "$2" "$ROOT/bench/vec_questions.c" \
		retrieval/{vec,vec_codes,tokenize,bm25,index,title,chunk,embed} util/{thread,pages}
}
mkdir -p "$TMP/base"
git -C "$ROOT" archive "$BASE" src | tar -x -C "$TMP"/base
build "$TMP/q-tree" "$ROOT/src"
build "$TMP/q-base" "$TMP/base/src"

ab_text | tr -d '\r' | iconv -f utf-8 -t utf-8 -c >"$TMP/text.txt"

echo "== vec_questions: this tree $(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet -- src || echo +changes), base $BASE, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
"$TMP/q-tree" build "$TMP/text.txt" "$SNIPPETS" "$TMP/bench.idx"
ask() {                  # ask tree|base: one round of questions
	"$TMP/q-$1" ask "$TMP/text.txt" "$QUESTIONS" "$TMP/bench.idx" "$REPS"
}
ab_rounds "questions, cos, top 20" ms "the hits" ask
