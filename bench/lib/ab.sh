# shellcheck shell=bash
# bench/lib/ab.sh - one shape of a build-against-BASE benchmark
# (embed_speed.sh, index_write.sh, vec_questions.sh); sourced, not run.
# Needs ROUNDS (ab_rounds) and CC (ab_build).
#
#   ab_build OUT SRC MAIN FILE...
#     MAIN (a bench program) compiled as OUT against the tree SRC: with
#     each FILE (a path under SRC without .c) that SRC has, and bench/ on
#     the include path (lib/bench.h).
#   ab_text
#     The retrieval benches' text on stdout: the licences under
#     /usr/share/common-licenses and the copyright files under
#     /usr/share/doc.
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

# shellcheck disable=SC2046
ab_build() {
	local out=$1 src=$2 main=$3 files=() f
	shift 3
	for f in "$@"; do
		[[ -f $src/$f.c ]] && files+=("$src/$f.c")
	done
	"$CC" -std=gnu11 -O2 -D_GNU_SOURCE -I"$src" -I"$(dirname "$main")" \
		$(pkg-config --cflags json-c) -o "$out" \
		"$main" "${files[@]}" -ljson-c -lstemmer -lm -lpthread
}

ab_text() {
	cat /usr/share/common-licenses/*
	find /usr/share/doc -name copyright -size -64k -print0 2>/dev/null |
		xargs -0 cat 2>/dev/null || true
}
