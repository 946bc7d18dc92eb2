#!/usr/bin/env bash
# bench/retrieval_ablation.sh - what each part of the hybrid ranking earns
# on known-item questions, and what it costs, on several corpora.
#
#   bench/retrieval_ablation.sh                 # CORPORA="man1 man3 perl debian"
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
# Results: bench/results/retrieval-ablation-<date>.txt.
#
# Environment: CORPORA, DOCS (all), BODY_MAX (6000 characters), BASE, CC.
set -euo pipefail

ROOT=$(dirname "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")")
CORPORA=${CORPORA:-man1 man3 perl debian}
DOCS=${DOCS:-all}
BODY_MAX=${BODY_MAX:-6000}
BASE=${BASE:-31afb0a}
CC=${CC:-cc}
CFLAGS="-std=gnu11 -O2 -g -D_GNU_SOURCE -Wall -Wextra -Wshadow -Wstrict-prototypes
	-Wmissing-prototypes -Wformat=2 -Wno-format-nonliteral -Werror"
LIBS="-ljson-c -lsqlite3 -lstemmer -lm"
RESULTS=$ROOT/bench/results
DATA=$ROOT/var/bench-data
OUT=$RESULTS/retrieval-ablation-$(date -u +%Y%m%d-%H%M%S).txt
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

[[ $DOCS =~ ^([1-9][0-9]*|all)$ ]] || { echo "DOCS must be a number or all" >&2; exit 2; }
# The corpora are rendered by man-db (manual pages) and pod2text (perl).
command -v man >/dev/null 2>&1 && command -v col >/dev/null 2>&1 &&
	[[ -f /usr/include/sqlite3.h ]] || "$ROOT/scripts/dev" deps

# shellcheck disable=SC2086
build() {    # build OUT SRCDIR [extra flags]
	local out=$1 src=$2 files=()
	shift 2
	for f in vec tokenize embed chunk bm25 proximity mmr filter index rank; do
		[[ -f $src/retrieval/$f.c ]] && files+=("$src/retrieval/$f.c")
	done
	$CC $CFLAGS "$@" -I"$src" $(pkg-config --cflags json-c) -o "$out" \
		"$ROOT/bench/retrieval_ablation.c" "${files[@]}" $LIBS
}
build "$TMP/ablation" "$ROOT/src"
mkdir -p "$TMP/base"
git -C "$ROOT" archive "$BASE" src | tar -x -C "$TMP/base"
build "$TMP/ablation-base" "$TMP/base/src" -DRANK_BASE

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
		"$TMP/ablation" "$json"
		"$TMP/ablation-base" "$json" base | sed -n -e 's/^[0-9].*snippets;/base tree: &/p' -e '/base tree)/p'
	done
} 2>&1 | tee "$OUT"
echo "saved to ${OUT#"$ROOT"/}"
