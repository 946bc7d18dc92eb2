#!/usr/bin/env bash
# bench/vec_batch.sh - exact vector top-k: sluice one question at a time
# (the float scan, and the pass over the rows' 8-bit codes that it ranks
# with) and in batches of 2 to 16 sharing one pass over the codes (as
# sluice work ranks the questions it answers together), on one thread and
# split between two (vec_topk_coded_parts), against FAISS
# IndexFlatIP on the same rows and queries, one question at a time and in
# batches, in queries per second.
#
# FAISS runs with OpenBLAS on one thread and on two (its batched search
# is a matrix product too; OPENBLAS_NUM_THREADS sets its threads).  The
# packages it needs (python3-faiss, and libopenblas0-pthread, without
# which FAISS gets the reference BLAS) are installed when missing.
#
# Environment: ROWS (100000), DIM (384), K (20), REPS (5), BATCHES
# ("1 4 8 16 32 64 200"), COPIES (1: sluice's batches read that many
# copies of the codes in turn; 24 of 100,000 rows are 920 MB, so each pass
# reads its codes from memory rather than from the cache, see vec_batch.c).
#   bench/vec_batch.sh | tee bench/results/vec-batch-<date>.txt
set -euo pipefail

ROOT=$(dirname "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")")
ROWS=${ROWS:-100000}
DIM=${DIM:-384}
K=${K:-20}
REPS=${REPS:-5}
BATCHES=${BATCHES:-1 4 8 16 32 64 200}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

need=()
for p in python3-faiss python3-numpy libopenblas0-pthread; do
	dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null | grep -qx installed || need+=("$p")
done
if ((${#need[@]})); then
	apt-get update -qq >/dev/null
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

echo "== vec batch $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) CPUs," \
	"$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), load $(cut -d' ' -f1-3 /proc/loadavg)"
# shellcheck disable=SC2046
gcc -O2 -std=gnu11 -Wall -Wextra -Werror -I"$ROOT/src" \
	-o "$TMP/vec_batch" "$ROOT/bench/vec_batch.c" "$ROOT/src/retrieval/vec.c" \
	"$ROOT/src/retrieval/vec_codes.c" "$ROOT/src/util/thread.c" -pthread -lm
"$TMP/vec_batch" "$ROWS" "$DIM" "$REPS" "$K" "$TMP"
for t in 1 2; do
	echo "-- OpenBLAS threads: $t"
	# shellcheck disable=SC2086
	OPENBLAS_NUM_THREADS=$t /usr/bin/python3 "$ROOT/bench/vec_batch.py" "$TMP" "$ROWS" "$DIM" \
		"$REPS" "$K" 1 $BATCHES
done
