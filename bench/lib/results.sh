# bench/lib/results.sh - a benchmark's output on the terminal and in its
# results file; sourced, not run.  Needs ROOT.
#
#   bench_tee OUT FUNCTION   runs FUNCTION (stderr too) into OUT and the
#                            terminal, names OUT, exits with FUNCTION's status
bench_tee() {
	local out=$1 rc
	shift
	set +e
	"$@" 2>&1 | tee "$out"
	rc=${PIPESTATUS[0]}
	set -e
	echo "results: ${out#"$ROOT"/}"
	exit "$rc"
}
