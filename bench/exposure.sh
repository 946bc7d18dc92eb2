#!/usr/bin/env bash
# bench/exposure.sh - systemd's exposure score of the shipped units.
#
# Writes sluice-serve.service and sluice-work.service from their .in files
# with the default paths (as `make` does) and runs
# `systemd-analyze security --offline=true` on each (systemd 252 or later;
# no running systemd needed).  Prints each unit's overall exposure and what
# is left open; results in bench/results/exposure-<date>.txt.  REV=<git
# revision> scores the units of that revision instead of the work tree's.
set -euo pipefail

ROOT=$(dirname "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")")
OUT=$ROOT/bench/results/exposure-$(date -u +%Y%m%d-%H%M%S).txt
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

for u in sluice-serve sluice-work; do
	if [[ -n ${REV:-} ]]; then
		git -C "$ROOT" show "$REV:systemd/$u.service.in"
	else
		cat "$ROOT/systemd/$u.service.in"
	fi | sed -e 's|@bindir@|/usr/local/bin|g' -e 's|@sysconfdir@|/usr/local/etc|g' >"$TMP/$u.service"
done
mkdir -p "$ROOT/bench/results"
{
	printf 'systemd unit exposure, %s; %s; units of %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
		"$(systemd-analyze --version | head -1)" "${REV:-the work tree}"
	for u in sluice-serve sluice-work; do
		printf '\n%s: systemd-analyze security --offline=true %s.service\n' "$u" "$u"
		(cd "$TMP" && systemd-analyze security --offline=true "$u.service" 2>&1) |
			grep -E '✗|Overall' || true
	done
} | tee "$OUT"
echo "results: $OUT"
