#!/usr/bin/perl
# singer connector failures: a tap that exits non-zero, a line that is not
# JSON, a value that breaks the schema, a tap that is not installed or a
# plugin name that leaves the taps directory.  Each fails the run with an
# ERROR line that says why (with the output line number), rolls back the
# rows not yet committed and leaves the state where it was.  A long run
# that fails after some commits keeps exactly the rows its saved state
# covers, and the next run resumes from there.

use strict;
use warnings;

use File::Temp qw(tempdir);
use Test::More;

use ConnectorFixture;
use JobsFixture;
use SluiceTest;

my ($token, $cid) = customer_token('demo');
my $LOGICAL = 't71_singer';
my $SCHEMA = wh_schema($cid, $LOGICAL);    # the demo customer's own database
drop_schema($SCHEMA);
my $dir = tempdir(CLEANUP => 1);
chmod 0755, $dir;

sub singer_job {
	my ($table, $config, %o) = @_;
	return { input => { connector => 'singer', plugin => $o{plugin} // 'tap-fixture',
			    table_name => 'items', config => $config },
		 table_name => $table, table_schema => $LOGICAL };
}

# Run a one-job pipeline that must fail: (run, job id, ERROR lines text, all text).
sub failing_run {
	my ($name, $job) = @_;
	my $p = make_pipeline($token, [ $job ]);
	my $run = run_pipeline($token, $cid, $p->{pipeline_id});
	is($run->{status}, 'FAILED', "$name: run FAILED");
	my $errors = log_text($token, $run->{run_id}, level => 'ERROR');
	return ($run, $p->{job_ids}[0], $errors, log_text($token, $run->{run_id}));
}

# --- the tap exits non-zero ---------------------------------------------------
{
	my ($run, $jid, $errors, $all) = failing_run('exit 3',
		singer_job('exit3', { records => 5, fail_after => 3, exit_code => 3 }));
	like($errors, qr/^ERROR .*tap tap-fixture exited with status 3 after \d+ lines of output; its last stderr line: fixture failure after 3 records/m,
		'exit 3: the ERROR line says how the tap ended and its last words')
		or diag($all);
	like($all, qr/^INFO tap: fixture failure after 3 records$/m,
		'exit 3: the stderr line is in the log');
	is(wh_count("`$SCHEMA`.`exit3`"), 0, 'exit 3: the uncommitted rows are rolled back');
	is(job_state_row($jid)->{state}, undef, 'exit 3: no state saved');
	is(job_get($token, $jid)->{job_status}, 'FAILED', 'exit 3: job_status FAILED');
}

# --- invalid JSON -----------------------------------------------------------------
{
	my ($run, $jid, $errors, $all) = failing_run('invalid JSON',
		singer_job('badjson', { records => 5, invalid_json_at => 3 }));
	like($errors, qr/^ERROR .*line 3: the tap wrote invalid JSON \(/m,
		'invalid JSON: the ERROR line names line 3') or diag($all);
	is(wh_count("`$SCHEMA`.`badjson`"), 0, 'invalid JSON: nothing loaded');
	is(job_state_row($jid)->{state}, undef, 'invalid JSON: no state saved');
}

# --- a value that does not fit the schema ---------------------------------------------
{
	my $src = "$dir/bad-value.jsonl";
	open my $fh, '>', $src or die $!;
	print {$fh} json_encode({ id => 1, amount => 2.5 }), "\n";
	print {$fh} json_encode({ id => 2, amount => 'lots' }), "\n";
	close $fh;
	my ($run, $jid, $errors, $all) = failing_run('bad value',
		singer_job('badvalue', { source => $src }));
	like($errors, qr/^ERROR .*line 3: stream 'items': property 'amount' is "lots", not a number/m,
		'bad value: the ERROR line names the line, property and value') or diag($all);
	is(wh_count("`$SCHEMA`.`badvalue`"), 0, 'bad value: the first record is rolled back too');
}

# --- a tap that is not there, a name that leaves the directory ---------------------------
{
	my ($run, $jid, $errors) = failing_run('missing tap',
		singer_job('missing', { records => 1 }, plugin => 'tap-nowhere'));
	like($errors, qr/^ERROR .*tap 'tap-nowhere' is not installed/m,
		'missing tap: a clear error');
	for my $bad ('../taps/tap-fixture', '..', '.hidden', 'a/b') {
		# Refused when the pipeline is made...
		my $res = http(POST => '/platform/pipeline', { token => $token, json => {
			name => 'bad tap', cron => undef, jobs => [ { input => { connector => 'singer',
			plugin => $bad, table_name => 'items' }, output => { plugin => 'mariadb',
			raw => { table_schema => $LOGICAL, table_name => 'badname' } } } ] } });
		is($res->{status}, 400, "plugin '$bad': refused at create");
		is((grep { $_->{field} eq 'jobs[0].input.plugin' } @{ $res->{json}{detail}{validation_errors} || [] })[0]{error_code},
		   'INVALID_PLUGIN', "plugin '$bad': INVALID_PLUGIN");
		# ... and by the runner, should a stored job name one.
		my $p = make_pipeline($token, [ singer_job('badname', { records => 1 }) ]);
		mysql("UPDATE jobs SET input = JSON_SET(input, '\$.plugin', " . sql_quote($bad)
		    . ") WHERE id = " . sql_quote($p->{job_ids}[0]));
		$run = run_pipeline($token, $cid, $p->{pipeline_id});
		is($run->{status}, 'FAILED', "plugin '$bad' stored: run FAILED");
		like(log_text($token, $run->{run_id}, level => 'ERROR'), qr/^ERROR .*input\.plugin must name a tap/m,
			"plugin '$bad' stored: refused before anything runs");
	}
	ok(!mysql("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = "
		. "'$SCHEMA' AND TABLE_NAME IN ('missing', 'badname')"),
		'no table made for a tap that did not run');
}

# --- failing after commits: the state covers exactly the committed rows -------------------
{
	# 25000 records, a STATE every 1000: commits at the first STATE after
	# 10000 uncommitted rows (singer_commit_rows), i.e. at 10000 and 20000.
	my $flag = "$dir/fail.flag";
	open my $fh, '>', $flag or die $!;
	close $fh;
	my $p = make_pipeline($token, [ singer_job('resume', { records => 25000,
		state_every => 1000, fail_after => 24500, fail_flag => $flag }) ]);
	my $jid = $p->{job_ids}[0];
	my $run = run_pipeline($token, $cid, $p->{pipeline_id});
	is($run->{status}, 'FAILED', 'resume: the first run fails at record 24500');
	is(wh_count("`$SCHEMA`.`resume`"), 20000,
		'resume: the rows of the two commits stay, the rest is rolled back');
	is(scalar mysql("SELECT MAX(id) FROM `$SCHEMA`.`resume`"), 20000,
		'resume: up to record 20000');
	is(job_state_row($jid)->{state}{bookmarks}{items}{replication_key_value}, 20000,
		'resume: the saved state is the one committed with record 20000');
	like(log_text($token, $run->{run_id}, level => 'WARNING'),
		qr/20000 rows committed earlier in this task stay loaded/,
		'resume: the log says what stays');
	unlink $flag;
	$run = run_pipeline($token, $cid, $p->{pipeline_id});
	is($run->{status}, 'SUCCESS', 'resume: the next run succeeds')
		or diag(log_text($token, $run->{run_id}));
	is($run->{rows_loaded}, 5000, 'resume: it loads the 5000 records after the state');
	is(wh_count("`$SCHEMA`.`resume`"), 25000, 'resume: every record exactly once');
	is(job_state_row($jid)->{state}{bookmarks}{items}{replication_key_value}, 25000,
		'resume: state at the end');
}

drop_schema($SCHEMA);
done_testing();
