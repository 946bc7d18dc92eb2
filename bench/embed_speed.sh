#!/usr/bin/env bash
# bench/embed_speed.sh - the built-in embedder of this tree against BASE's
# (a commit): each build embeds the same text, every 700-byte piece, at
# each of DIMS, ROUNDS times alternated; per dimension, the median time a
# piece of each and whether the two gave the same bits (the vectors' FNV-1a
# checksums).  Stored snippets and new questions are embedded by
# different versions after an upgrade, so a change that moves a bit is a
# change of the embedding space.
#
# The text is the retrieval benches' (/usr/share/common-licenses and the
# changelogs under /usr/share/doc), about TEXT_MB megabytes.
#
# Environment: BASE (c1b511a, the embedder before its bucket sort), DIMS
# ("384 7 4096"), ROUNDS (5), REPS (5 timings per run, the median kept),
# TEXT_MB (20), CC (cc).
#   bench/embed_speed.sh | tee bench/results/embed-speed-<date>.txt
set -euo pipefail

ROOT=$(dirname "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")")
BASE=${BASE:-c1b511a}
DIMS=${DIMS:-384 7 4096}
ROUNDS=${ROUNDS:-5}
REPS=${REPS:-5}
TEXT_MB=${TEXT_MB:-20}
CC=${CC:-cc}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# shellcheck source=bench/lib/ab.sh
. "$ROOT/bench/lib/ab.sh"

build() {                # build OUT SRC
	"$CC" -O2 -march=native -I"$2" -o "$1" "$ROOT/bench/embed_speed.c" \
		"$2/retrieval/embed.c" "$2/retrieval/tokenize.c" -lstemmer -lm
}
mkdir -p "$TMP/base"
git -C "$ROOT" archive "$BASE" src | tar -x -C "$TMP"/base
build "$TMP/embed-tree" "$ROOT/src"
build "$TMP/embed-base" "$TMP/base/src"

{ cat /usr/share/common-licenses/*
  find /usr/share/doc -name 'changelog*.gz' -print0 | xargs -0 zcat 2>/dev/null || true
} | head -c $((TEXT_MB * 1000000)) >"$TMP/text.txt"

echo "== embed_speed: this tree $(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet -- src/retrieval || echo +changes), base $BASE, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
embed() {                # embed tree|base: one run at $dim
	"$TMP/embed-$1" "$TMP/text.txt" "$dim" "$REPS"
}
for dim in $DIMS; do
	ab_rounds "dim $dim" us "the vectors" embed
done
