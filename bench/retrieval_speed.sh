#!/usr/bin/env bash
# bench/retrieval_speed.sh - retrieval speed, in one run.
#
# Part 1 (no service needed): bench/vec_speed.c on ROWS x DIM float32 rows
# (100,000 x 384): one exact top-10 scan per metric against the time to
# read the same bytes in the same process (the memory-bandwidth bound),
# medians of REPS repetitions, and the ratio scan / read per metric
# (target <= 1.5 for the kernel chosen at run time; the portable kernel's
# figures are shown too).  The program is compiled here, with the flags the
# project builds with (-std=gnu11 -O2 -g and the warning set), against
# src/retrieval/vec.c, so no configure run is needed.
#
# Part 2 (the running service): POST-to-success latency p50/p99 under 16
# concurrent clients and ingestion throughput in snippets per second.  Its
# hook is bench/retrieval_service.sh: when present it is run here with the
# same environment, and its output is part of this run's results.
#
# The output is also saved to bench/results/retrieval-speed-<date>.txt.
# Environment: ROWS (100000), DIM (384), REPS (9), CC (cc).
set -euo pipefail

ROOT=$(dirname "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")")
ROWS=${ROWS:-100000}
DIM=${DIM:-384}
REPS=${REPS:-9}
CC=${CC:-cc}
CFLAGS="-std=gnu11 -O2 -g -D_GNU_SOURCE -Wall -Wextra -Wshadow -Wstrict-prototypes
	-Wmissing-prototypes -Wformat=2 -Wno-format-nonliteral -Werror"
RESULTS=$ROOT/bench/results
OUT=$RESULTS/retrieval-speed-$(date -u +%Y%m%d-%H%M%S).txt
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

mkdir -p "$RESULTS"
{
	echo "== retrieval speed $(date -u +%Y-%m-%dT%H:%M:%SZ), $(uname -m)," \
		"$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
	echo "== part 1: exact top-10 scan vs memory read bound"
	# shellcheck disable=SC2086
	$CC $CFLAGS -I"$ROOT/src" -o "$TMP/vec_speed" \
		"$ROOT/bench/vec_speed.c" "$ROOT/src/retrieval/vec.c" \
		"$ROOT/src/retrieval/vec_codes.c" -lm
	"$TMP/vec_speed" "$ROWS" "$DIM" "$REPS"
	echo "== part 2: POST-to-success latency and ingestion throughput (service)"
	if [[ -x $ROOT/bench/retrieval_service.sh ]]; then
		"$ROOT/bench/retrieval_service.sh"
	else
		echo "not run: bench/retrieval_service.sh (the service's part) is not there yet"
	fi
} 2>&1 | tee "$OUT"
echo "saved to ${OUT#"$ROOT"/}"
