# bench/lib/wrk.sh - what the wrk benchmarks share; sourced, not run.
# Needs THREADS, CONNECTIONS (see wrk_settings) and a scratch directory TMP.

# The settings every wrk benchmark takes from the environment, with their
# defaults: ROUNDS (3), DURATION (10s), CONNECTIONS (32), THREADS (2),
# WARMUP (3s); a bare number of seconds gets its "s".
wrk_settings() {
	ROUNDS=${ROUNDS:-3}
	DURATION=${DURATION:-10s}
	CONNECTIONS=${CONNECTIONS:-32}
	THREADS=${THREADS:-2}
	WARMUP=${WARMUP:-3s}
	[[ $DURATION =~ ^[0-9]+$ ]] && DURATION=${DURATION}s
	[[ $WARMUP =~ ^[0-9]+$ ]] && WARMUP=${WARMUP}s
	[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || { echo "ROUNDS must be a positive number" >&2; exit 2; }
}

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

# wrk_rounds WIDTH LABEL_A URL_A LABEL_B URL_B LABEL_C URL_C [wrk options...]:
# a warm-up of each target (WARMUP), then ROUNDS rounds of the three in turn
# (DURATION each), each round's table and the medians printed with labels
# WIDTH wide.  Sets am, bm, cm: the median req/s of a, b and c.
wrk_rounds() {
	local w=$1 la=$2 ua=$3 lb=$4 ub=$5 lc=$6 uc=$7 r res
	local ar ap ae br bp be cr cp ce
	local -a a_rps=() b_rps=() c_rps=() a_p99=() b_p99=() c_p99=()
	shift 7
	echo "warming up ($WARMUP each)..."
	run_wrk "$ua" "$WARMUP" "$@" >/dev/null
	run_wrk "$ub" "$WARMUP" "$@" >/dev/null
	run_wrk "$uc" "$WARMUP" "$@" >/dev/null
	for ((r = 1; r <= ROUNDS; r++)); do
		res=$(run_wrk "$ua" "$DURATION" "$@")
		read -r ar ap ae <<<"$res"
		res=$(run_wrk "$ub" "$DURATION" "$@")
		read -r br bp be <<<"$res"
		res=$(run_wrk "$uc" "$DURATION" "$@")
		read -r cr cp ce <<<"$res"
		a_rps+=("$ar") a_p99+=("$ap") b_rps+=("$br") b_p99+=("$bp")
		c_rps+=("$cr") c_p99+=("$cp")
		printf '\nround %d\n' "$r"
		printf "  %-${w}s %12s %10s %8s\n" target 'req/s' 'p99 ms' errors
		printf "  %-${w}s %12.2f %10.3f %8d\n" "$la" "$ar" "$ap" "$ae"
		printf "  %-${w}s %12.2f %10.3f %8d\n" "$lb" "$br" "$bp" "$be"
		printf "  %-${w}s %12.2f %10.3f %8d\n" "$lc" "$cr" "$cp" "$ce"
		if ((ae + be + ce > 0)); then
			echo "  warning: errors or non-2xx answers in this round"
		fi
	done
	am=$(median "${a_rps[@]}")
	bm=$(median "${b_rps[@]}")
	cm=$(median "${c_rps[@]}")
	printf '\nmedians over %d rounds\n' "$ROUNDS"
	printf "  %-${w}s %12s %10s\n" target 'req/s' 'p99 ms'
	printf "  %-${w}s %12s %10s\n" "$la" "$am" "$(median "${a_p99[@]}")"
	printf "  %-${w}s %12s %10s\n" "$lb" "$bm" "$(median "${b_p99[@]}")"
	printf "  %-${w}s %12s %10s\n" "$lc" "$cm" "$(median "${c_p99[@]}")"
}
