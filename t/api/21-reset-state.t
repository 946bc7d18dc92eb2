#!/usr/bin/perl
# POST /platform/jobs/{jobId}/reset-state: the effect per connector (spec:
# reset table) in the database, 409 while the job runs, 404 for unknown,
# malformed and other customers' jobs, 500 when the database fails.

use strict;
use warnings;

use JSON::PP ();
use Test::More;

use JobsFixture;
use SluiceTest;

my ($token) = customer_token('demo');
my ($other) = customer_token('jobs-reset-other');

sub reset_state {
	my ($id, $tok) = @_;
	return http(POST => "/platform/jobs/$id/reset-state", { token => $tok // $token });
}

sub processed_count {
	my ($job_id) = @_;
	return scalar mysql('SELECT COUNT(*) FROM file_storage_processed WHERE job_id = '
		. sql_quote($job_id));
}

my $BOOKMARK = '2026-01-31T10:00:00Z';
my $STATE = { bookmarks => { 'public-orders' => { replication_key_value => '2026-01-31' },
			     'public-items' => { replication_key_value => 42 } } };

my $p = seed_pipeline(token => $token, jobs => [
	{ load_type => 'incremental', incremental_column_name => 'updated_at',
	  incremental_column_type => 'timestamp without time zone', bookmark => $BOOKMARK },
	{ load_type => 'incremental_with_qualify', incremental_column_name => 'updated_at',
	  incremental_column_type => 'timestamp without time zone', primary_keys => ['id'],
	  bookmark => $BOOKMARK },
	{ load_type => 'full_load' },
	{ connector => 'singer', state => $STATE },
	{ connector => 'file_storage', processed => [ 'exports/a.csv', 'exports/b.csv',
						      'exports/sub/c.csv' ] },
	{ connector => 'file_storage', processed => [ 'exports/keep.csv' ] },
]);
my $pid = $p->{pipeline_id};
my ($incr, $qual, $full, $singer, $files, $files2) = @{ $p->{job_ids} };

sub reset_ok {
	my ($id, $name, $re) = @_;
	my $res = reset_state(uuid_hyphens($id));
	json_response_is($res, 200, undef, $name);
	is_deeply([ sort keys %{ $res->{json} } ], [qw(detail message status)],
		"$name: fields");
	is($res->{json}{status}, JSON::PP::true, "$name: status true");
	like($res->{json}{detail}, qr/\Q$id\E/, "$name: detail names the job id");
	like($res->{json}{message}, qr/next execution starts from the beginning/i,
		"$name: message");
	like($res->{json}{message}, $re, "$name: message says what happens") if $re;
	return $res;
}

# --- jdbc -------------------------------------------------------------------------

is(job_get($token, $incr)->{input}{incremental_column_value}, $BOOKMARK,
	'jdbc: GET shows the bookmark before');
reset_ok($incr, 'jdbc incremental', qr/all rows/);
ok(!exists job_get($token, $incr)->{input}{incremental_column_value},
	'jdbc: GET shows no bookmark after');
is(job_get($token, $incr)->{input}{load_type}, 'incremental', 'jdbc: GET load_type kept');
is(job_state_row($incr)->{incremental_column_value}, undef, 'jdbc: bookmark cleared');
is(job_row($incr)->{load_type}, 'incremental', 'jdbc: load type kept');
is(job_row($incr)->{incremental_column_name}, 'updated_at', 'jdbc: column kept');
is(job_state_row($qual)->{incremental_column_value}, $BOOKMARK,
	"another job's bookmark untouched");

reset_ok($qual, 'jdbc incremental_with_qualify');
is(job_state_row($qual)->{incremental_column_value}, undef, 'qualify: bookmark cleared');
ok(!exists job_get($token, $qual)->{input}{incremental_column_value},
	'qualify: GET shows no bookmark');
ok((grep { $_->{task_id} eq "$qual.qualify" } @{ http(GET => "/platform/pipeline/$pid",
	{ token => $token })->{json}{tasks} }), 'qualify: GET still lists the qualify task');
ok((grep { $_ eq "$qual.qualify" } task_ids($pid)),
	'qualify: the deduplication task still runs');

my $before = job_get($token, $full);
reset_ok($full, 'jdbc full_load', qr/full_load/);
is_deeply(job_get($token, $full), $before, 'full_load: GET shows no change');
is(job_row($full)->{load_type}, 'full_load', 'full_load: no effect');

# Resetting again is fine: the state is already clear.
reset_ok($incr, 'jdbc reset twice');

# --- singer --------------------------------------------------------------------------

is_deeply(job_state_row($singer)->{state}, $STATE, 'singer: state before');
reset_ok($singer, 'singer', qr/full sync/);
is(job_state_row($singer)->{state}, undef, 'singer: every stream bookmark cleared');

# --- file_storage --------------------------------------------------------------------

is(processed_count($files), 3, 'file_storage: processed files before');
reset_ok($files, 'file_storage', qr/every file under the prefix/);
is(processed_count($files), 0, 'file_storage: processed-file state cleared');
is(processed_count($files2), 1, "file_storage: another job's state untouched");

# --- RUNNING: 409, nothing changes -----------------------------------------------------

my $r = seed_pipeline(token => $token, jobs => [
	{ load_type => 'incremental', incremental_column_name => 'id',
	  incremental_column_type => 'bigint', bookmark => '2026-01-01',
	  job_status => 'RUNNING' },
	{ connector => 'singer', state => $STATE },
]);
my ($running, $sibling) = @{ $r->{job_ids} };
my $res = reset_state($running);
is($res->{status}, 409, 'RUNNING job: 409');
is_deeply([ keys %{ $res->{json} } ], ['detail'], 'RUNNING: {"detail"}');
like($res->{json}{detail}, qr/RUNNING/, 'RUNNING: says why');
is(job_state_row($running)->{incremental_column_value}, '2026-01-01',
	'RUNNING: bookmark kept');

# A run of the pipeline that is RUNNING counts for every job of it.
my $run_id = join '', map { sprintf '%02x', int rand 256 } 1 .. 16;
mysql(sprintf "INSERT INTO pipeline_runs (id, pipeline_id, customer_id, status) "
	. "VALUES (%s, %s, %s, 'RUNNING')", sql_quote($run_id),
	sql_quote($r->{pipeline_id}), sql_quote(env('SLUICE_DEMO_CUSTOMER_ID')));
$res = reset_state($sibling);
is($res->{status}, 409, 'job of a RUNNING run: 409');
is_deeply(job_state_row($sibling)->{state}, $STATE, 'RUNNING run: state kept');
mysql('UPDATE pipeline_runs SET status = \'SUCCESS\' WHERE id = ' . sql_quote($run_id));
reset_ok($sibling, 'after the run ended');

# --- unknown, malformed, another customer's --------------------------------------------

my $nf = { detail => 'Job not found' };
json_response_is(reset_state("${pid}_9"), 404, $nf, 'unknown job index');
json_response_is(reset_state('3f9c2a10_5b7e_4d21_9a0c_12ab34cd56ef_0'), 404, $nf,
	'unknown pipeline');
json_response_is(reset_state('nope'), 404, $nf, 'malformed id');
json_response_is(reset_state("${pid}_-1"), 404, $nf, 'negative index');

my $o = seed_pipeline(token => $token, jobs => [ { load_type => 'incremental',
	incremental_column_name => 'id', incremental_column_type => 'bigint',
	bookmark => '2026-02-02' } ]);
json_response_is(reset_state($o->{job_ids}[0], $other), 404, $nf,
	"another customer's job");
is(job_state_row($o->{job_ids}[0])->{incremental_column_value}, '2026-02-02',
	"another customer's: nothing changed");

# --- database error: 500 {"detail"}, nothing changed ----------------------------------

mysql(q{CREATE TRIGGER jobs_test_fsp_fail BEFORE DELETE ON file_storage_processed
	FOR EACH ROW SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'test failure'});
my $f = seed_pipeline(token => $token, jobs => [ { connector => 'file_storage',
	processed => [ 'exports/x.csv' ] } ]);
$res = reset_state($f->{job_ids}[0]);
mysql('DROP TRIGGER jobs_test_fsp_fail');
json_response_is($res, 500, { detail => 'Internal Server Error' }, 'database error');
is(processed_count($f->{job_ids}[0]), 1, 'database error: nothing changed');

done_testing;
