#!/usr/bin/env bash
# bench/chaos.sh - the chaos soak: ten minutes of mixed load while serve
# workers, children of sluice work and sluice work itself are killed -9
# every 10 to 30 s and MariaDB is restarted twice; then the checks that
# nothing was lost, doubled or left stuck (bench/chaos.pl says which).
#
# Starts the `bench` instance, runs bench/chaos.pl against it, saves the
# output to bench/results/chaos-<date>.txt and stops the instance.  Not part
# of the test suite (it takes DURATION + up to DRAIN seconds).
#
# Environment: DURATION (600), DRAIN (300), SLUICE_PORT (28443).
set -euo pipefail

ROOT=$(dirname "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")")
export DURATION=${DURATION:-600} DRAIN=${DRAIN:-300}
RESULTS=$ROOT/bench/results
OUT=$RESULTS/chaos-$(date -u +%Y%m%d-%H%M%S).txt
export SLUICE_INSTANCE=bench
export SLUICE_PORT=${SLUICE_PORT:-28443}
DEV=$ROOT/scripts/dev
TMP=$(mktemp -d)
# shellcheck source=bench/lib/instance.sh
. "$ROOT/bench/lib/instance.sh"
# shellcheck source=bench/lib/results.sh
. "$ROOT/bench/lib/results.sh"
CHAOS_DIR=$TMP
export CHAOS_DIR
bench_instance_up bench/chaos.sh
mkdir -p "$RESULTS"
soak() {
	echo "== chaos soak $(date -u +%Y-%m-%dT%H:%M:%SZ), $(uname -m), $(nproc) CPUs," \
		"load average $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "== command: DURATION=$DURATION DRAIN=$DRAIN SLUICE_PORT=$SLUICE_PORT bench/chaos.sh"
	echo "== sluice.conf: $(grep -E '^(workers|work_|runner_)' "$SLUICE_CONF" | tr '\n' ' ')"
	perl "$ROOT/bench/chaos.pl"
}
bench_tee "$OUT" soak
