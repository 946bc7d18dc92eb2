# bench/lib/duckdb.sh - DuckDB for the benchmarks that compare with it;
# sourced, not run.  Needs a scratch directory TMP.

# duckdb_install DIR: the @duckdb/node-api npm package in DIR (installed
# once; never committed), and DUCK_VERSION set to its version.
duckdb_install() {
	local dir=$1
	if [[ ! -d $dir/node_modules/@duckdb/node-api ]]; then
		echo "installing @duckdb/node-api into $dir..."
		mkdir -p "$dir"
		[[ -f $dir/package.json ]] || echo '{"private": true}' >"$dir/package.json"
		(cd "$dir" && npm install --no-audit --no-fund --loglevel=error @duckdb/node-api >"$TMP/npm.log" 2>&1) || {
			cat "$TMP/npm.log"
			echo "npm install @duckdb/node-api failed" >&2
			return 1
		}
	fi
	DUCK_VERSION=$(sed -n 's/.*"version": "\(.*\)".*/\1/p' "$dir/node_modules/@duckdb/node-api/package.json")
}
