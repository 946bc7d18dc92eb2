# bench/lib/instance.sh - start the `bench` instance for a benchmark and stop
# it when the script exits; sourced, not run.  Needs ROOT; sets DEV, TMP (a
# scratch directory removed at exit) and the instance's SLUICE_* variables.
# bench_up NAME: NAME is the script, for messages.

export SLUICE_INSTANCE=bench
export SLUICE_PORT=${SLUICE_PORT:-28443}
DEV=$ROOT/scripts/dev
TMP=$(mktemp -d)

bench_up() {
	local name=$1
	# shellcheck disable=SC2064
	trap "\"$DEV\" down bench >/dev/null 2>&1 || echo '$name: could not stop the bench instance' >&2; rm -rf '$TMP'" EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	echo "starting the bench instance..."
	if ! "$DEV" up bench >"$TMP/up.log" 2>&1; then
		cat "$TMP/up.log" >&2
		echo "$name: scripts/dev up bench failed" >&2
		exit 1
	fi
	eval "$("$DEV" env bench)"
}
