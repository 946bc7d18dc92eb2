#!/usr/bin/perl
# How the singer connector runs a tap: its config (input.config plus the
# connection's fields, the config's own keys winning) in a 0600 file in a
# private 0700 directory that is gone after the run; --catalog from
# input.catalog; no descriptor of the job process and a minimal
# environment; stderr lines in the run log (bounded, the connection's
# password redacted).  Streams: the job's stream into output.raw.table_name,
# another into {table_name}__{stream}, appended when it has no key.  A
# line longer than singer_line_max_bytes fails the run naming it.

use strict;
use warnings;

use File::Temp qw(tempdir);
use Test::More;

use ConnectorFixture;
use JobsFixture;
use SluiceTest;

my ($token, $cid) = customer_token('demo');
my $LOGICAL = 't72_singer';
my $SCHEMA = wh_schema($cid, $LOGICAL);    # the demo customer's own database
drop_schema($SCHEMA);
my $dir = tempdir(CLEANUP => 1);
chmod 0755, $dir;

my $PASSWORD = 'pw-' . join('', map { ('a' .. 'z')[rand 26] } 1 .. 16);
my $res = http(POST => '/platform/connections', { token => $token, json => {
	name => "t72-tap-" . time . "-$$", plugin => 'postgres', host => 'db.example',
	port => 5433, database => 'shop', user => 'etl', password => $PASSWORD,
	options => { sslmode => 'require', host_alias => 'from-options' } } });
is($res->{status}, 201, 'a connection for the tap') or diag(describe($res));
my $conn = $res->{json}{connection_id};

# --- config, files, process ----------------------------------------------------
my $dump = "$dir/dump.json";
my $catalog = { streams => [ { stream => 'items', tap_stream_id => 'items',
			       selected => JSON::PP::true } ] };
my $p = make_pipeline($token, [ {
	input => { connector => 'singer', plugin => 'tap-fixture', table_name => 'items',
		   connection_id => $conn, catalog => $catalog,
		   config => { records => 3, host => 'config-host', dump_config => $dump,
			       extra_stream => 'Audit-Log', stderr_lines => 1005,
			       stderr_config_key => 'password' } },
	table_name => 'items', table_schema => $LOGICAL } ]);
my $run = run_pipeline($token, $cid, $p->{pipeline_id});
is($run->{status}, 'SUCCESS', 'run: SUCCESS') or diag(log_text($token, $run->{run_id}));

open my $fh, '<', $dump or die "no dump from the tap: $!";
my $d = json_decode(do { local $/; <$fh> });
close $fh;
my $cfg = $d->{config};
is($cfg->{host}, 'config-host', 'config: input.config wins over the connection');
is($cfg->{port}, 5433, 'config: port from the connection');
is($cfg->{user}, 'etl', 'config: user from the connection');
is($cfg->{password}, $PASSWORD, 'config: the decrypted password');
is($cfg->{dbname}, 'shop', 'config: dbname from the connection');
is($cfg->{database}, 'shop', 'config: database from the connection');
is($cfg->{sslmode}, 'require', 'config: connection options');
is($cfg->{records}, 3, 'config: input.config keys');
is_deeply($d->{catalog}, $catalog, 'catalog: input.catalog passed with --catalog');
is($d->{state}, undef, 'no --state on the first run');
is($d->{config_mode}, '0600', 'the config file is 0600');
is($d->{dir_mode}, '0700', 'its directory is 0700');
like($d->{config_path}, qr{^/.+/sluice-singer-[^/]+/config\.json$}, 'a private directory');
is($d->{cwd} . '/config.json', $d->{config_path}, 'the tap runs in that directory');
ok(!-e $d->{config_path} && !-e $d->{cwd}, 'the directory is removed after the run');
is_deeply($d->{fds}, [ 0, 1, 2, 3 ], 'no descriptor of the job process reaches the tap');
is_deeply([ sort keys %{ $d->{env} } ], [ qw(HOME LANG PATH TMPDIR) ],
	'a minimal environment');
is($d->{env}{HOME}, $d->{cwd}, 'HOME is the private directory');

# --- the run log -----------------------------------------------------------------
my @logs = run_logs($token, $run->{run_id}, limit => 10000);
my @tap = grep { $_->{message} =~ /^tap: progress \d+$/ } @logs;
is(scalar @tap, 999, 'stderr: the first 1000 lines are logged (one came before the progress lines)');
my $all = join '', map { "$_->{level} $_->{message}\n" } @logs;
like($all, qr/^WARNING the tap wrote more than 1000 lines to stderr: the rest is not logged$/m,
	'stderr: the cut is logged');
unlike($all, qr/\Q$PASSWORD\E/, 'the connection password never reaches the log');
like($all, qr/^INFO tap: config password=/m, 'the line that held it is there, redacted');
like($all, qr/^INFO stream Audit-Log: 7 columns, rows appended; table \Q$SCHEMA\E\.items__audit_log created$/m,
	'a second stream gets its own table');

# --- tables of the streams --------------------------------------------------------
is(wh_count("`$SCHEMA`.`items`"), 3, 'the job stream loads into output.raw.table_name');
is(wh_count("`$SCHEMA`.`items__audit_log`"), 3, 'the other stream into table__stream');
my $cols = wh_columns($SCHEMA, 'items__audit_log');
is(scalar(grep { $_->{key} eq 'PRI' } values %$cols), 0, 'no key_properties: no primary key');
$res = http(POST => "/platform/jobs/$p->{job_ids}[0]/reset-state", { token => $token });
$run = run_pipeline($token, $cid, $p->{pipeline_id});
is($run->{status}, 'SUCCESS', 'after reset: SUCCESS');
is(wh_count("`$SCHEMA`.`items`"), 3, 'after reset: keyed stream still one row per key');
is(wh_count("`$SCHEMA`.`items__audit_log`"), 6, 'after reset: the stream without keys is appended again');

# --- a line over singer_line_max_bytes (1 MB in the test stack) --------------------
$p = make_pipeline($token, [ {
	input => { connector => 'singer', plugin => 'tap-fixture', table_name => 'items',
		   config => { records => 2, big_line_bytes => 1100000 } },
	table_name => 'big', table_schema => $LOGICAL } ]);
$run = run_pipeline($token, $cid, $p->{pipeline_id});
is($run->{status}, 'FAILED', 'long line: FAILED');
like(log_text($token, $run->{run_id}, level => 'ERROR'),
	qr/line 2: longer than singer_line_max_bytes \(1048576 bytes\)/,
	'long line: the ERROR names the line and the limit');
is(wh_count("`$SCHEMA`.`big`"), 0, 'long line: nothing loaded');

# --- a tap that leaves a process holding its output open ------------------------
my $orphan = "$dir/orphan.pid";
$p = make_pipeline($token, [ {
	input => { connector => 'singer', plugin => 'tap-fixture', table_name => 'items',
		   config => { records => 2, orphan_sleep => 120, orphan_pid_file => $orphan } },
	table_name => 'orphan', table_schema => $LOGICAL } ]);
my $t0 = time;
$run = run_pipeline($token, $cid, $p->{pipeline_id}, timeout => 60);
my $took = time - $t0;
is($run->{status}, 'SUCCESS', 'orphan: the run still ends') or diag(log_text($token, $run->{run_id}));
cmp_ok($took, '<', 30, 'orphan: within the grace period, not the orphan\'s 120 s');
is(wh_count("`$SCHEMA`.`orphan`"), 2, 'orphan: the records are loaded');
like(log_text($token, $run->{run_id}, level => 'WARNING'),
	qr/kept its output open: that process group was killed/, 'orphan: logged');
open my $ofh, '<', $orphan or die "orphan pid: $!";
chomp(my $opid = <$ofh>);
close $ofh;
ok(wait_until(5, sub { !proc_alive($opid) }), 'orphan: the left-behind process is gone');

# --- the job's memory limit holds for the tap ----------------------------------------
$p = make_pipeline($token, [ {
	input => { connector => 'singer', plugin => 'tap-fixture', table_name => 'items',
		   config => { records => 2, alloc_mb => 200 } },
	table_name => 'mem', table_schema => $LOGICAL, memory_allocated_mb => 64 } ]);
$run = run_pipeline($token, $cid, $p->{pipeline_id});
is($run->{status}, 'FAILED', 'memory: a tap over the job\'s 64 MB fails the run');
my $mem_logs = log_text($token, $run->{run_id});
like($mem_logs, qr/^INFO tap: Out of memory!/m, 'memory: the tap could not allocate');
like($mem_logs, qr/^ERROR .*memory limit of 64 MB/m, 'memory: the ERROR line names the limit')
	or diag($mem_logs);
ok(!mysql("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = "
	. "'$SCHEMA' AND TABLE_NAME = 'mem'"), 'memory: the tap died before its SCHEMA: no table');

drop_schema($SCHEMA);
done_testing();
