# bench/lib/wrk.sh - what the wrk benchmarks share; sourced, not run.
# Needs THREADS, CONNECTIONS and a scratch directory TMP.

# wrk prints latencies as 812.00us, 1.23ms, 2.00s or 1.00m.
to_ms() {
	awk -v v="$1" 'BEGIN {
		n = v + 0; u = v; sub(/^[0-9.]+/, "", u)
		if (u == "us") n /= 1000; else if (u == "s") n *= 1000
		else if (u == "m") n *= 60000; else if (u == "h") n *= 3600000
		printf "%.3f", n }'
}

# run_wrk URL DURATION [wrk options...]: one run, printing
# "req_s p99_ms errors" (errors = socket errors + non-2xx/3xx answers).
run_wrk() {
	local url=$1 dur=$2 out=$TMP/wrk.out rps p99 err
	shift 2
	wrk -t"$THREADS" -c"$CONNECTIONS" -d"$dur" --latency "$@" "$url" >"$out" 2>&1 || {
		cat "$out" >&2
		return 1
	}
	rps=$(awk '/^Requests\/sec:/ { print $2 }' "$out")
	p99=$(awk '$1 == "99%" { print $2 }' "$out")
	err=$(awk '/Non-2xx or 3xx responses:/ { n += $NF }
		/Socket errors:/ { for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+,?$/) n += $i + 0 }
		END { print n + 0 }' "$out")
	[[ -n $rps && -n $p99 ]] || {
		cat "$out" >&2
		return 1
	}
	printf '%s %s %s\n' "$rps" "$(to_ms "$p99")" "$err"
}

median() {
	printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 }
		END { if (NR % 2) printf "%.2f", v[(NR + 1) / 2]
		      else printf "%.2f", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

ratio() { awk -v n="$1" -v d="$2" 'BEGIN { printf "%.3f", (d > 0) ? n / d : 0 }'; }
