#!/usr/bin/env bash
# bench/retrieval_ablation.sh - what each part of the hybrid ranking earns
# on known-item questions, and what it costs, on several corpora.
#
#   bench/retrieval_ablation.sh      # every corpus, and the four technical ones joined
#   CORPORA=perl DOCS=300 bench/retrieval_ablation.sh
#
# For each corpus (bench/lib/corpus.pl says what they are), builds the
# documents once (kept in var/bench-data/), then runs
# bench/retrieval_ablation.c twice in the same run: compiled against this
# tree (every row) and against BASE (default 31afb0a, the last commit with
# the reciprocal-rank-fusion ranking: its defaults only), so the ranking
# cost of both is measured on the same machine minutes apart, as medians
# of one rank_question call per question.  No service is started: the
# program links src/retrieval/*.c with the flags the project builds with.
# With CALLGRIND=1 (the default when valgrind is installed) each tree's
# defaults are also run once per question under valgrind's callgrind,
# counting the instructions of rank_question alone: a cost figure that
# other processes on the machine do not move.
# Results: bench/results/retrieval-ablation-<date>.txt.
#
# SWEEP=FILE instead scores each line of FILE, "doc head prox vec repeat
# lambda_mult mmr" (rank.h's weights, MMR's trade-off, MMR 1 or 0), on every
# corpus: for tuning; nothing is saved.
#
# Environment: CORPORA, DOCS (all), BODY_MAX (6000 characters), BASE, CC,
# CALLGRIND (1, or 0 to skip), SWEEP.
set -euo pipefail

ROOT=$(dirname "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")")
CORPORA=${CORPORA:-man1 man3 perl debian gcide man1+man3+perl+debian}
DOCS=${DOCS:-all}
BODY_MAX=${BODY_MAX:-6000}
BASE=${BASE:-31afb0a}
CC=${CC:-cc}
CFLAGS="-std=gnu11 -O2 -g -D_GNU_SOURCE -Wall -Wextra -Wshadow -Wstrict-prototypes
	-Wmissing-prototypes -Wformat=2 -Wno-format-nonliteral -Werror"
LIBS="-ljson-c -lsqlite3 -lstemmer -lm -lpthread"
CALLGRIND=${CALLGRIND:-$(command -v valgrind >/dev/null 2>&1 && echo 1 || echo 0)}
RESULTS=$ROOT/bench/results
DATA=$ROOT/var/bench-data
OUT=$RESULTS/retrieval-ablation-$(date -u +%Y%m%d-%H%M%S).txt
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

[[ $DOCS =~ ^([1-9][0-9]*|all)$ ]] || { echo "DOCS must be a number or all" >&2; exit 2; }
# The corpora are rendered by man-db (manual pages) and pod2text (perl);
# gcide reads dict-gcide and wordnet-base (all in scripts/dev's DEPS).
command -v man >/dev/null 2>&1 && command -v col >/dev/null 2>&1 &&
	[[ -f /usr/include/sqlite3.h && -f /usr/share/dictd/gcide.index &&
	   -f /usr/share/wordnet/index.noun ]] || "$ROOT/scripts/dev" deps

# shellcheck disable=SC2086
build() {    # build OUT SRCDIR [extra flags]
	local out=$1 src=$2 files=()
	shift 2
	# Every file the ranking and the index writer link, in either tree
	# (older trees lack some: vec_codes.c, title.c, util/thread.c, util/pages.c).
	for f in retrieval/{vec,vec_codes,tokenize,embed,chunk,bm25,lexical,proximity,mmr,filter,index,title,rank} \
	         util/thread util/pages; do
		[[ -f $src/$f.c ]] && files+=("$src/$f.c")
	done
	$CC $CFLAGS "$@" -I"$src" $(pkg-config --cflags json-c) -o "$out" \
		"$ROOT/bench/retrieval_ablation.c" "${files[@]}" $LIBS
}
build "$TMP/ablation" "$ROOT/src"
if [[ -n ${SWEEP:-} ]]; then
	mkdir -p "$DATA"
	for c in $CORPORA; do
		json=$DATA/corpus-$c-$DOCS-$BODY_MAX.json
		[[ -s $json ]] || perl "$ROOT/bench/lib/corpus.pl" "$c" "$DOCS" "$BODY_MAX" >"$json"
		echo "== corpus $c"
		"$TMP/ablation" "$json" sweep <"$SWEEP"
	done
	exit 0
fi
mkdir -p "$TMP/base"
git -C "$ROOT" archive "$BASE" src | tar -x -C "$TMP/base"
build "$TMP/ablation-base" "$TMP/base/src" -DRANK_BASE

# Instructions of rank_question per question: tree (ablation or
# ablation-base), corpus, its index file.
instructions() {
	local out=$TMP/callgrind.out
	valgrind --tool=callgrind --toggle-collect=rank_question --callgrind-out-file="$out" \
		"$TMP/$1" "$2" cost "$3" >"$TMP/cost.txt" 2>/dev/null
	local n total
	n=$(awk '{print $1; exit}' "$TMP/cost.txt")
	total=$(callgrind_annotate "$out" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1; exit}')
	awk -v t="$total" -v n="$n" 'BEGIN { printf "%.0f", t / n }'
}

mkdir -p "$RESULTS" "$DATA"
{
	echo "== retrieval ablation $(date -u +%Y-%m-%dT%H:%M:%SZ), $(uname -m)," \
		"$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
	echo "== this tree $(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet || echo +changes), base $BASE"
	for c in $CORPORA; do
		json=$DATA/corpus-$c-$DOCS-$BODY_MAX.json
		if [[ ! -s $json ]]; then
			perl "$ROOT/bench/lib/corpus.pl" "$c" "$DOCS" "$BODY_MAX" >"$json.tmp"
			mv "$json.tmp" "$json"
		fi
		echo
		echo "== corpus $c (DOCS=$DOCS BODY_MAX=$BODY_MAX)"
		"$TMP/ablation" "$json" "$TMP/this.idx"
		"$TMP/ablation-base" "$json" base "$TMP/base.idx" |
			sed -n -e 's/^[0-9].*snippets;/base tree: &/p' -e '/base tree)/p'
		if ((CALLGRIND)); then
			this=$(instructions ablation "$json" "$TMP/this.idx")
			base=$(instructions ablation-base "$json" "$TMP/base.idx")
			echo "instructions per question (callgrind, rank_question): this tree $this," \
				"base tree $base, ratio $(awk -v a="$this" -v b="$base" 'BEGIN { printf "%.2f", a / b }')"
		fi
		rm -f "$TMP/this.idx" "$TMP/base.idx"
	done
} 2>&1 | tee "$OUT"
echo "saved to ${OUT#"$ROOT"/}"
