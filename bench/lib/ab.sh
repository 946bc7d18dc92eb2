# shellcheck shell=bash
# bench/lib/ab.sh - one shape of a build-against-BASE benchmark
# (embed_speed.sh, index_write.sh); sourced, not run.  Needs ROUNDS.
#
#   ab_rounds LABEL UNIT WHAT RUN
#     ROUNDS rounds of `RUN tree` then `RUN base`, each printing a line with
#     "median <number> <UNIT>" and ending "fnv <checksum>"; prints every
#     line, says when a round's checksums differ (WHAT: what they sum, "the
#     vectors"), then the median of each build's medians and their ratio.
ab_rounds() {
	local label=$1 unit=$2 what=$3 run=$4 r t b mt mb
	local tree=() base=()

	for ((r = 1; r <= ROUNDS; r++)); do
		t=$("$run" tree)
		b=$("$run" base)
		echo "round $r tree: $t"
		echo "round $r base: $b"
		tree+=("$(sed -E "s/.*median ([0-9.]+) $unit.*/\\1/" <<<"$t")")
		base+=("$(sed -E "s/.*median ([0-9.]+) $unit.*/\\1/" <<<"$b")")
		[[ ${t##*fnv } == "${b##*fnv }" ]] || echo "$label: $what DIFFER from BASE's"
	done
	mt=$(printf '%s\n' "${tree[@]}" | sort -n | sed -n "$(((ROUNDS + 1) / 2))p")
	mb=$(printf '%s\n' "${base[@]}" | sort -n | sed -n "$(((ROUNDS + 1) / 2))p")
	echo "$label: medians tree $mt $unit, base $mb $unit: $(awk -v a="$mb" -v b="$mt" 'BEGIN { printf "%.2f", a / b }') x"
}
