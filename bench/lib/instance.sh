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

# For the platform benchmarks: src and wh run one SQL statement on the jdbc
# source and the warehouse, api METHOD PATH [BODY] calls the API as the demo
# customer (TOKEN, read and write), jget A.B.0 prints that member of the
# JSON on stdin.
bench_platform_client() {
	src() { sh -c "$SLUICE_SOURCE_MYSQL -N -B"' -e "$1"' sh "$1"; }
	wh() { sh -c "$SLUICE_MYSQL -N -B"' -e "$1"' sh "$1"; }
	TOKEN=$("$SLUICE_BIN" token -c "$SLUICE_CONF" --customer demo --sub bench@example.com \
		--permissions PLATFORM.READ,PLATFORM.WRITE)
	api() {
		local method=$1 path=$2 body=${3:-}
		curl -sk --fail-with-body -X "$method" -H "Authorization: Bearer $TOKEN" \
			-H 'Content-Type: application/json' ${body:+-d "$body"} "$SLUICE_URL$path"
	}
	jget() { python3 -c 'import json,sys; d=json.load(sys.stdin)
for k in sys.argv[1].split("."): d=d[int(k)] if isinstance(d, list) else d[k]
print(d)' "$1"; }
}

# bench_pipeline_jobs N: the "jobs" of a pipeline the platform benchmarks
# seed, N jdbc jobs (a JSON array).
bench_pipeline_jobs() {
	local jobs='' j
	for ((j = 0; j < $1; j++)); do
		jobs+="${jobs:+,}{\"input\":{\"connector\":\"jdbc\",\"plugin\":\"postgres\",
			\"table_name\":\"public.orders_$j\",\"load_type\":\"incremental\",
			\"incremental_column_name\":\"updated_at\",
			\"incremental_column_type\":\"timestamp with time zone\",
			\"column_include_list\":[\"id\",\"customer_id\",\"amount\",\"updated_at\"]},
			\"output\":{\"plugin\":\"mariadb\",\"raw\":{\"table_name\":\"orders_$j\",
			\"table_schema\":\"raw\"}},\"memory_allocated_mb\":4096}"
	done
	printf '[%s]' "$jobs"
}
