#!/usr/bin/env bash
# bench/sandbox.sh - do sluice and its Singer taps stay inside the system
# call allow lists of the systemd units?
#
# systemd cannot run here (it is not PID 1 in a container), so this checks
# the units' SystemCallFilter the way the kernel would see it: it starts the
# `bench` instance, runs `sluice serve` and `sluice work` under `strace -f`,
# drives them (health, JWT and Basic routes, an upload and its inference, a
# download, a storage table and a link load, a retrieval question, and two
# Singer pipeline runs: the Perl fixture tap and a Python tap written here),
# and compares every system call their processes made (the taps' included)
# with the unit's list: @system-service without @privileged, and for
# sluice-serve without @resources either.  It also looks for what
# MemoryDenyWriteExecute (sluice-serve) would refuse: a mapping both
# writable and executable.  Prints each unit's verdict and the calls used;
# results in bench/results/sandbox-<date>.txt; the instance is stopped at the
# end.
#
# Environment: SLUICE_PORT (the bench instance's https port, default 28443).
set -euo pipefail

ROOT=$(dirname "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")")
export SLUICE_INSTANCE=bench
DEV=$ROOT/scripts/dev
RESULTS=$ROOT/bench/results
OUT=$RESULTS/sandbox-$(date -u +%Y%m%d-%H%M%S).txt
TMP=$(mktemp -d)
chmod 755 "$TMP"

command -v strace >/dev/null || { echo "bench/sandbox.sh: needs strace (apt-get install strace)" >&2; exit 1; }
command -v python3 >/dev/null || { echo "bench/sandbox.sh: needs python3" >&2; exit 1; }

. "$ROOT/bench/lib/instance.sh"
bench_instance_up bench/sandbox.sh

# Taps the runs use: the test fixture (Perl) and a small Python one.
mkdir -p "$TMP/taps"
cp "$ROOT/t/fixtures/taps/tap-fixture" "$TMP/taps/"
cat >"$TMP/taps/tap-py" <<'PY'
#!/usr/bin/env python3
"""A Singer tap in Python: what a packaged tap's interpreter start, imports
and output cost in system calls (json, argparse, datetime, hashlib, a
thread)."""
import argparse, datetime, hashlib, json, sys, threading

p = argparse.ArgumentParser()
p.add_argument('--config'); p.add_argument('--state'); p.add_argument('--catalog')
a = p.parse_args()
cfg = json.load(open(a.config))
out = []
t = threading.Thread(target=lambda: out.append(hashlib.sha256(b'x').hexdigest()))
t.start(); t.join()
print(json.dumps({"type": "SCHEMA", "stream": "items", "key_properties": ["id"],
    "schema": {"properties": {"id": {"type": "integer"}, "at": {"type": "string", "format": "date-time"},
                              "h": {"type": "string"}}}}))
for i in range(1, int(cfg.get("records", 50)) + 1):
    print(json.dumps({"type": "RECORD", "stream": "items", "record": {"id": i,
        "at": datetime.datetime.now(datetime.timezone.utc).isoformat(), "h": out[0]}}))
print(json.dumps({"type": "STATE", "value": {"bookmarks": {"items": {"id": i}}}}))
PY
chmod 755 "$TMP/taps"/*
printf 'singer_taps_dir = %s\n' "$TMP/taps" >>"$SLUICE_CONF"

# serve and work again, each under strace.
"$DEV" work-stop >/dev/null
"$DEV" serve-stop >/dev/null
(cd "$TMP" && exec setsid strace -f -qq -o "$TMP/serve.trace" "$SLUICE_BIN" serve -c "$SLUICE_CONF" \
	>>"$SLUICE_SERVE_LOG" 2>&1 </dev/null) &
(cd "$TMP" && exec setsid strace -f -qq -o "$TMP/work.trace" "$SLUICE_BIN" work -c "$SLUICE_CONF" \
	>>"$SLUICE_VAR/log/work.log" 2>&1 </dev/null) &
WORK_STRACE=$!
for _ in $(seq 1 100); do
	[[ $(curl -sk -o /dev/null -w '%{http_code}' "$SLUICE_URL/health") == 200 ]] && break
	sleep 0.2
done

echo "driving serve and work..."
A="Authorization: Bearer $SLUICE_DEMO_TOKEN"
J='Content-Type: application/json'
api() { curl -sk -H "$A" "$@"; }
get_json() { perl -MJSON::PP -e 'my $d = decode_json(join "", <STDIN>); for (split /\./, $ARGV[0]) { $d = ref $d eq "ARRAY" ? $d->[$_] : $d->{$_} } print $d // ""' "$1"; }
curl -sk "$SLUICE_URL/health" >/dev/null
curl -sk -u "$SLUICE_DEMO_BASIC" "$SLUICE_URL/_test/basic" >/dev/null
curl -sk -u "demo:wrong" "$SLUICE_URL/_test/basic" >/dev/null
api "$SLUICE_URL/platform/pipelines" >/dev/null
printf 'id,name\n1,a\n2,b\n' >"$TMP/s.csv"
DS=$(api -F "file=@$TMP/s.csv" "$SLUICE_URL/storage-explorer/storage/upload?folder_path=sandbox" | get_json files.0.dataset_id)
api "$SLUICE_URL/storage-explorer/storage/download?file_path=sandbox/s.csv" >/dev/null
for _ in $(seq 1 100); do
	[[ $(api "$SLUICE_URL/storage-explorer/datasets/$DS" | get_json status) == ready ]] && break
	sleep 0.2
done
TB=$(api -H "$J" --data "{\"table_name\":\"sandbox_$$\",\"columns\":[{\"name\":\"id\",\"type\":\"BIGINT\"},{\"name\":\"name\",\"type\":\"VARCHAR\"}]}" \
	"$SLUICE_URL/storage-explorer/tables" | get_json table_id)
api -X POST "$SLUICE_URL/storage-explorer/tables/$TB/datasets/$DS" >/dev/null
RD=$(curl -sk -u "$SLUICE_DEMO_BASIC" -H "$J" --data '{"name":"sandbox"}' "$SLUICE_URL/dataset" | get_json dataset_id)
curl -sk -u "$SLUICE_DEMO_BASIC" -H "$J" --data '{"documents":[{"text":"Glaciers carve valleys.","metadata":{}}]}' \
	"$SLUICE_URL/dataset/$RD/documents" >/dev/null
for _ in $(seq 1 100); do
	[[ $(curl -sk -u "$SLUICE_DEMO_BASIC" "$SLUICE_URL/dataset/$RD" | get_json status) == success ]] && break
	sleep 0.2
done
Q=$(curl -sk -u "$SLUICE_DEMO_BASIC" -H "$J" --data '{"question":"What carves valleys?"}' \
	"$SLUICE_URL/dataset/$RD/question" | get_json question_id)
curl -sk -u "$SLUICE_DEMO_BASIC" "$SLUICE_URL/dataset/$RD/question/$Q?wait=5" >/dev/null
for tap in tap-fixture:generate tap-py:records; do
	key=${tap#*:}
	tap=${tap%%:*}
	P=$(api -H "$J" --data "{\"name\":\"$tap\",\"jobs\":[{\"input\":{\"connector\":\"singer\",\"plugin\":\"$tap\",
		\"table_name\":\"items\",\"config\":{\"$key\":50}},
		\"output\":{\"plugin\":\"mariadb\",\"raw\":{\"table_schema\":\"sandbox\",\"table_name\":\"${tap//-/_}\"}}}]}" \
		"$SLUICE_URL/platform/pipeline" | get_json pipeline_id)
	api -H "$J" --data "{\"pipeline_id\":\"$P\",\"customer_id\":\"$SLUICE_DEMO_CUSTOMER_ID\"}" \
		"$SLUICE_URL/platform/pipeline/execute" >/dev/null
	status=
	for _ in $(seq 1 300); do
		status=$(api "$SLUICE_URL/platform/pipeline/$P/pipeline_run" | get_json data.runs.0.status)
		[[ $status == SUCCESS || $status == FAILED ]] && break
		sleep 0.2
	done
	echo "$tap run: $status"
	printf '%s run: %s\n' "$tap" "$status" >>"$TMP/runs"
done

# Stop both (the traces end with them): work is strace's child.
kill -TERM "$(pgrep -P "$WORK_STRACE")" "$(cat "$SLUICE_SERVE_PID")" 2>/dev/null || true
wait 2>/dev/null || true

# The calls each trace made, against each unit's list.
perl - "$TMP" >"$TMP/verdict" <<'PL'
use strict; use warnings;
my $tmp = shift;
sub expand {
	my ($g, $seen) = @_;
	return () if $seen->{$g}++;
	my @out;
	for (`systemd-analyze syscall-filter $g 2>/dev/null`) {
		next unless /^\s+([@\w-]+)\s*$/;
		my $name = $1;
		push @out, $name =~ /^@/ ? expand($name, $seen) : $name;
	}
	return @out;
}
my %service = map { $_ => 1 } expand('@system-service', {});
delete @service{ expand('@privileged', {}) };
my %serve = %service;
delete @serve{ expand('@resources', {}) };
for my $unit ([ 'sluice-serve', 'serve', \%serve ], [ 'sluice-work', 'work', \%service ]) {
	my ($name, $file, $allowed) = @$unit;
	my (%used, $wx);
	open my $fh, '<', "$tmp/$file.trace" or die "$file.trace: $!";
	while (<$fh>) {
		$used{$1}++ if /^\d+\s+(?:<\.\.\. )?([a-z_0-9]+)[( ]/ && $1 ne 'exited';
		$wx++ if /^\d+\s+(mmap|mprotect|pkey_mprotect)\(.*PROT_WRITE\|PROT_EXEC|PROT_EXEC\|PROT_WRITE/
			|| /^\d+\s+(mmap|mprotect)\(.*PROT_READ\|PROT_WRITE\|PROT_EXEC/;
	}
	my @outside = grep { !$allowed->{$_} } sort keys %used;
	printf "%s: %d distinct system calls, %s\n", $name, scalar(keys %used),
		@outside ? 'OUTSIDE the filter: ' . join(' ', @outside) : 'all inside the filter';
	printf "  writable and executable mappings: %d%s\n", $wx // 0,
		$name eq 'sluice-serve' ? ' (MemoryDenyWriteExecute)' : ' (allowed for sluice-work)';
	print "  used: ", join(' ', sort keys %used), "\n";
}
PL

mkdir -p "$RESULTS"
{
	printf 'sluice sandbox check, %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
	printf 'machine: %s; %s; %s; strace %s\n' "$(uname -r)" "$("$SLUICE_BIN" version)" \
		"$(systemd-analyze --version | head -1)" "$(strace -V | head -1 | awk '{ print $NF }')"
	printf 'filters: sluice-serve @system-service ~@privileged ~@resources; sluice-work @system-service ~@privileged\n\n'
	cat "$TMP/runs"
	cat "$TMP/verdict"
} | tee "$OUT"
echo "results: $OUT"
