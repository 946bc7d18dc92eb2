#!/usr/bin/env bash
# bench/serve_pool.sh - what the worker pool costs and what holds it.
#
# Starts the `bench` instance (workers = 2, as written by scripts/dev) and
# measures, in one run:
#   (a) RSS of each serve process (VmRSS, and Private_* of smaps_rollup)
#       after REQUESTS mixed requests (health, JWT listing, Basic routes,
#       questions, small uploads): what one more worker costs;
#   (b) an upload of UPLOAD_MIB MiB sent as fast as the client can: the
#       total time, and the worker's share of it (the request's ms in the
#       serve log: nginx buffers the body first, so the worker is held only
#       while nginx hands it over at local speed);
#   (c) ranking a question in a worker right after the POST, by index size
#       (SIZES snippets): the question's elapsed_ms (created_at to
#       finished_at), medians of 9, against question_inline_budget_ms;
#   (d) /health latency (p50, p99, max of 200 requests, one connection each)
#       alone, then with 2 x workers (or MIX_CLIENTS) slow uploads, long polls and
#       wrong-password clients at once.
# Saves the output to bench/results/serve-pool-<date>.txt; the instance is
# stopped at the end.
#
# Environment: REQUESTS (2000; 0 skips a), UPLOAD_MIB (256; 0 skips b),
# SIZES ("1000 10000 40000"), INLINE_MAX (question_inline_max_snippets for
# the run), HEALTH (0 skips d), SLUICE_PORT (28443).
set -euo pipefail

ROOT=$(dirname "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")")
export REQUESTS=${REQUESTS:-2000} UPLOAD_MIB=${UPLOAD_MIB:-256}
export SIZES=${SIZES:-1000 10000 40000}
RESULTS=$ROOT/bench/results
OUT=$RESULTS/serve-pool-$(date -u +%Y%m%d-%H%M%S).txt
export SLUICE_INSTANCE=bench
export SLUICE_PORT=${SLUICE_PORT:-28443}
DEV=$ROOT/scripts/dev
TMP=$(mktemp -d)
# shellcheck source=bench/lib/instance.sh
. "$ROOT/bench/lib/instance.sh"
bench_instance_up bench/serve_pool.sh
mkdir -p "$RESULTS"
{
	echo "== serve pool $(date -u +%Y-%m-%dT%H:%M:%SZ), $(uname -m), $(nproc) CPUs," \
		"load average $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "== command: REQUESTS=$REQUESTS UPLOAD_MIB=$UPLOAD_MIB SIZES=\"$SIZES\"" \
		"${INLINE_MAX:+INLINE_MAX=$INLINE_MAX }${HEALTH:+HEALTH=$HEALTH }SLUICE_PORT=$SLUICE_PORT bench/serve_pool.sh"
	perl -I"$ROOT/t/lib" "$ROOT/bench/serve_pool.pl"
} 2>&1 | tee "$OUT"
echo "results: ${OUT#"$ROOT"/}"
