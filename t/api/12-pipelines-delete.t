#!/usr/bin/perl
# DELETE /platform/pipeline/{id}: the customer_name header (401 {"msg"},
# 403), 404 for unknown, malformed and another customer's ids, 409 while a
# run is CREATED or RUNNING, and the transaction: everything of the
# pipeline goes (pipeline, jobs, job states, processed files, tasks, runs,
# task statuses, logs), connections and other pipelines stay, and a
# database failure half-way leaves every row in place with a 500.

use strict;
use warnings;

use Test::More;

use SluiceTest;

# The runs this file sets up must stay as written: sluice work's runner
# would claim and execute them, so it is stopped for the whole file.
{
	my $w = dev('work-stop');
	die "scripts/dev work-stop failed: $w->{err}\n" if $w->{exit};
}
END { local $?; dev('work-start') }

my $token = env('SLUICE_DEMO_TOKEN');
my $cid = env('SLUICE_DEMO_CUSTOMER_ID');
my $NOT_FOUND = { detail => 'Pipeline not found' };
my %NAME = (customer_name => 'demo');

sub job {
	my ($connector, %in) = @_;
	my %base = (jdbc => { connector => 'jdbc', plugin => 'postgres', table_name => 't' },
		    singer => { connector => 'singer', plugin => 'tap-x', table_name => 't' },
		    file_storage => { connector => 'file_storage', plugin => 'local', prefix => 'in/' });
	return { input => { %{ $base{$connector} }, %in },
		 output => { plugin => 'mariadb', raw => { table_name => 't', table_schema => 'raw' } } };
}

# Set-up: a connection of the demo customer, used by the first job.
my $conn = '0f0f0f0f-1111-4222-8333-444444444412';
mysql("INSERT IGNORE INTO connections (id, customer_id, name, plugin, host, port, database_name, "
      . "user_name, password_enc) VALUES ('$conn', '$cid', 'conn-12', 'postgres', 'db', 5432, "
      . "'d', 'u', REPEAT('x', 40))");

sub make_pipeline {
	my ($name) = @_;
	my $res = http(POST => '/platform/pipeline', { token => $token, json => { name => $name,
		cron => '0 3 * * *', jobs => [
			job('jdbc', connection_id => $conn, load_type => 'incremental_with_qualify',
			    incremental_column_name => 'id', incremental_column_type => 'bigint',
			    primary_keys => [ 'id' ]),
			job('singer'), job('file_storage') ] } });
	is($res->{status}, 201, "create $name") or diag describe($res);
	my $p = $res->{json}{pipeline_id};
	# Set-up: history as the runner leaves it (the runner is not part of
	# the API): a finished run with task statuses and logs, job state.
	my $run = substr(join('', map { sprintf '%08x', int rand 0xffffffff } 1 .. 4), 0, 32);
	mysql("INSERT INTO pipeline_runs (id, pipeline_id, customer_id, status, started_at, finished_at) "
	      . "VALUES ('$run', '$p', '$cid', 'SUCCESS', NOW(3), NOW(3))");
	mysql("INSERT INTO run_task_status (run_id, task_id, status) VALUES ('$run', '${p}_0.extract_load', 'SUCCESS')");
	mysql("INSERT INTO run_logs (run_id, line_no, level, task_id, message) VALUES "
	      . "('$run', 1, 'INFO', '${p}_0.extract_load', 'started'), ('$run', 2, 'INFO', NULL, 'done')");
	mysql("UPDATE job_state SET incremental_column_value = '42' WHERE job_id = '${p}_0'");
	mysql("UPDATE job_state SET state = '{\"bookmarks\":{\"t\":1}}' WHERE job_id = '${p}_1'");
	mysql("INSERT INTO file_storage_processed (job_id, file_path, last_modified) VALUES "
	      . "('${p}_2', 'in/a.csv', NOW(3)), ('${p}_2', 'in/b.csv', NOW(3))");
	return ($p, $run);
}

# Rows of the pipeline in each table it reaches.
sub footprint {
	my ($p, $run) = @_;
	return {
		pipelines => scalar mysql("SELECT COUNT(*) FROM pipelines WHERE id = '$p'"),
		jobs => scalar mysql("SELECT COUNT(*) FROM jobs WHERE pipeline_id = '$p'"),
		job_state => scalar mysql("SELECT COUNT(*) FROM job_state WHERE job_id LIKE '${p}\\_%'"),
		file_storage_processed => scalar mysql("SELECT COUNT(*) FROM file_storage_processed WHERE job_id LIKE '${p}\\_%'"),
		orchestration_tasks => scalar mysql("SELECT COUNT(*) FROM orchestration_tasks WHERE pipeline_id = '$p'"),
		pipeline_runs => scalar mysql("SELECT COUNT(*) FROM pipeline_runs WHERE pipeline_id = '$p'"),
		run_task_status => scalar mysql("SELECT COUNT(*) FROM run_task_status WHERE run_id = '$run'"),
		run_logs => scalar mysql("SELECT COUNT(*) FROM run_logs WHERE run_id = '$run'"),
	};
}
my $FULL = { pipelines => 1, jobs => 3, job_state => 3, file_storage_processed => 2,
	     orchestration_tasks => 4, pipeline_runs => 1, run_task_status => 1, run_logs => 2 };
my $EMPTY = { map { $_ => 0 } keys %$FULL };

sub del {
	my ($id, %o) = @_;
	my %h = exists $o{headers} ? %{ $o{headers} } : %NAME;
	return http(DELETE => "/platform/pipeline/$id", { token => $o{token} // $token, headers => \%h });
}

my ($p, $run) = make_pipeline('to-delete');
my ($keep, $keep_run) = make_pipeline('to-keep');
is_deeply(footprint($p, $run), $FULL, 'set-up: the pipeline reaches every table');

# --- header -------------------------------------------------------------------------

json_response_is(del($p, headers => {}), 401, { msg => 'customer_name header is required' },
		 'no customer_name header: 401 {"msg"}');
json_response_is(del($p, headers => { customer_name => '' }), 401,
		 { msg => 'customer_name header is required' }, 'empty customer_name header');
json_response_is(del($p, headers => { customer_name => 'someone-else' }), 403,
		 { detail => 'customer_name does not match the token\'s customer' },
		 'customer_name of another customer: 403');
json_response_is(del($p, headers => { customer_name => 'DEMO' }), 403, undef,
		 'customer_name compared exactly');
is_deeply(footprint($p, $run), $FULL, 'nothing deleted by the refused calls');

# --- 404 ---------------------------------------------------------------------------------

my $other = craft_jwt(undef, { sub => 'x@example.com', customer_id => '0a0a0a0a-2222-4222-8333-444444444412',
	customer_name => 'other-12', permissions => [ 'PLATFORM.READ', 'PLATFORM.WRITE' ],
	iat => time, exp => time + 3600 });
json_response_is(del('01234567_89ab_4cde_8f01_23456789abcd'), 404, $NOT_FOUND, 'unknown id');
json_response_is(del('nope'), 404, $NOT_FOUND, 'malformed id');
json_response_is(del($p, token => $other, headers => { customer_name => 'other-12' }), 404,
		 $NOT_FOUND, 'another customer\'s pipeline answers as unknown');
is_deeply(footprint($p, $run), $FULL, 'still all there');

# --- 409 while a run is active ------------------------------------------------------------

for my $status ('CREATED', 'RUNNING') {
	# Set-up: an active run, as execute or the runner would make it.
	my $active = sprintf '%032x', $status eq 'CREATED' ? 0xc1 : 0xc2;
	mysql("INSERT INTO pipeline_runs (id, pipeline_id, customer_id, status) "
	      . "VALUES ('$active', '$p', '$cid', '$status')");
	my $res = del($p);
	json_response_is($res, 409, undef, "run $status: 409");
	like($res->{json}{detail} // '', qr/run in progress/, "run $status: detail says why");
	mysql("DELETE FROM pipeline_runs WHERE id = '$active'");
}
mysql("UPDATE jobs SET job_status = 'RUNNING' WHERE id = '${p}_1'");
json_response_is(del($p), 409, undef, 'a job RUNNING: 409');
mysql("UPDATE jobs SET job_status = 'SUCCESS' WHERE id = '${p}_1'");
is_deeply(footprint($p, $run), $FULL, 'nothing deleted while running');

# --- a database failure half-way ---------------------------------------------------------

# Set-up: a trigger makes the delete of job states fail after the runs,
# logs and tasks are already gone inside the transaction.
my $trigger = 0;
END { mysql('DROP TRIGGER IF EXISTS t12_job_state_fail') if $trigger }
mysql("CREATE TRIGGER t12_job_state_fail BEFORE DELETE ON job_state FOR EACH ROW "
      . "SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'injected failure'");
$trigger = 1;
my $res = del($p);
json_response_is($res, 500, { detail => 'Database error while deleting the pipeline; nothing was deleted' },
		 'failure mid-transaction: 500 {"detail"}');
is_deeply(footprint($p, $run), $FULL, 'failure mid-transaction: every row still there');
unlike(scalar serve_log_since(0), qr/eyJhbGci/, 'no token in the serve log');
mysql('DROP TRIGGER t12_job_state_fail');
$trigger = 0;

# --- success ----------------------------------------------------------------------------

(my $hyphen = $p) =~ tr/_/-/;
$res = del($hyphen);
json_response_is($res, 200, { pipeline_id => $p, status => 'PIPELINE_DELETED' },
		 'delete by the hyphenated id: 200, underscore id');
is_deeply(footprint($p, $run), $EMPTY, 'nothing of the pipeline remains in any table');
is(mysql("SELECT COUNT(*) FROM connections WHERE id = '$conn'"), 1, 'the connection remains');
is_deeply(footprint($keep, $keep_run), $FULL, 'the other pipeline is untouched');
json_response_is(http(GET => "/platform/pipeline/$p", { token => $token }), 404, $NOT_FOUND,
		 'detail after delete: 404');
ok(!grep({ $_->{pipeline_id} eq $p } @{ http(GET => '/platform/pipelines', { token => $token })->{json} }),
   'gone from the list');
json_response_is(del($p), 404, $NOT_FOUND, 'deleting again: 404');

json_response_is(http(DELETE => "/platform/pipeline/$keep", { headers => \%NAME }), 401, undef,
		 'no token: 401');

done_testing;
