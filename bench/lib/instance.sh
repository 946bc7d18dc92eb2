# bench/lib/instance.sh - start the bench instance for a benchmark and stop
# it (and remove the scratch directory TMP) when the script exits; sourced,
# not run.  Needs ROOT, DEV and TMP; sets the SLUICE_* variables of
# `scripts/dev env bench`.
bench_instance_up() {
	local name=$1
	bench_cleanup() {
		"$DEV" down bench >/dev/null 2>&1 || echo "$name: could not stop the bench instance" >&2
		rm -rf "$TMP"
	}
	trap bench_cleanup EXIT
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
