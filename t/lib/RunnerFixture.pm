package RunnerFixture;

# Shared code of the runner tests (t/api/60-64*.t): pipelines whose jobs
# use the fixture Singer tap (t/fixtures/taps/tap-fixture, told by its
# config how many records to emit, how slowly, how much memory to take),
# executing and waiting for runs, reading a run's rows, task statuses and
# log lines, and sluice work processes started, stopped and re-configured.
#
# Everything asserted by the tests is what the API answers and what the
# database holds; SQL writes here are set-up only (a schedule made due
# now instead of in a minute, a runner setting for this file).

use strict;
use warnings;

use Carp qw(croak);
use Exporter qw(import);
use POSIX qw(WNOHANG);
use Time::HiRes qw(time sleep);

use SluiceTest;

our @EXPORT = qw(
	tap_job jdbc_job make_pipeline execute_run wait_run wait_runs run_row
	task_rows run_logs log_messages work_pid restart_work with_work_conf
	start_extra_work stop_extra_work sq runs_of tap_pid_file children_of
);

my $seq = 0;

# A job of the fixture tap: %config is the tap's config (generate, sleep_ms,
# alloc_mb, hang_after, fail_after, pid_file ...).
sub tap_job {
	my (%o) = @_;
	my %config = (generate => 3, %{ $o{config} || {} });
	$seq++;
	my %job = (
		input => { connector => 'singer', plugin => 'tap-fixture',
			   table_name => 'items', config => \%config },
		output => { plugin => 'mariadb',
			    raw => { table_schema => $o{schema} // 'runner_t',
				     table_name => $o{table} // "items_${$}_$seq" } },
	);
	$job{memory_allocated_mb} = $o{memory} if defined $o{memory};
	return \%job;
}

# A jdbc job (used where the source is never reached: a driver this build
# lacks, or a connection to a closed port).
sub jdbc_job {
	my (%o) = @_;
	$seq++;
	my %in = (connector => 'jdbc', plugin => $o{plugin} // 'mariadb',
		  table_name => $o{table_name} // 'src', %{ $o{input} || {} });
	return { input => \%in, output => { plugin => 'mariadb',
		raw => { table_schema => 'runner_t', table_name => "j_${$}_$seq" } } };
}

# POST /platform/pipeline -> the created Pipeline object.
sub make_pipeline {
	my (%o) = @_;
	my %body = (name => $o{name} // 'runner test', description => 'runner',
		    cron => $o{cron}, jobs => $o{jobs} || [ tap_job() ]);
	$body{cron_timezone} = $o{cron_timezone} if exists $o{cron_timezone};
	$body{retries} = $o{retries} if exists $o{retries};
	$body{run_timeout_s} = $o{run_timeout_s} if exists $o{run_timeout_s};
	my $res = http(POST => '/platform/pipeline',
		       { token => $o{token} // env('SLUICE_DEMO_TOKEN'), json => \%body });
	croak 'POST /platform/pipeline: ' . describe($res) unless $res->{status} == 201;
	return $res->{json};
}

# POST /platform/pipeline/execute -> run_id.
sub execute_run {
	my ($pipeline_id, %o) = @_;
	my $res = http(POST => '/platform/pipeline/execute',
		       { token => $o{token} // env('SLUICE_DEMO_TOKEN'),
			 json => { pipeline_id => $pipeline_id,
				   customer_id => $o{customer_id} // env('SLUICE_DEMO_CUSTOMER_ID') } });
	croak 'execute: ' . describe($res) unless $res->{status} == 200;
	return $res->{json}{data}{run_id};
}

sub runs_of {
	my ($pipeline_id) = @_;
	return map { $_->[0] } mysql('SELECT id FROM pipeline_runs WHERE pipeline_id = '
		. sq($pipeline_id) . ' ORDER BY created_at, id');
}

# The pipeline_runs row as a hash.
sub run_row {
	my ($run_id) = @_;
	my @c = qw(status trigger_type attempt rows_loaded error claimed_by
		   started_at finished_at log_lines cancel_requested_by);
	my ($r) = mysql('SELECT ' . join(', ', map { "IFNULL($_, '<NULL>')" } @c)
		. ' FROM pipeline_runs WHERE id = ' . sq($run_id));
	return undef unless $r;
	my %h;
	@h{@c} = map { $_ eq '<NULL>' ? undef : $_ } @$r;
	return \%h;
}

# Wait until the run is SUCCESS or FAILED; its row (undef on timeout).
sub wait_run {
	my ($run_id, $timeout) = @_;
	my $row;
	wait_until($timeout // 60, sub {
		$row = run_row($run_id);
		$row && ($row->{status} eq 'SUCCESS' || $row->{status} eq 'FAILED');
	}, 0.2) or return undef;
	return $row;
}

sub wait_runs {
	my ($timeout, @ids) = @_;
	my $list = join ', ', map { sq($_) } @ids;
	return wait_until($timeout, sub {
		mysql("SELECT COUNT(*) FROM pipeline_runs WHERE id IN ($list) "
		      . "AND status IN ('SUCCESS', 'FAILED')") == @ids;
	}, 0.25);
}

# {task_id => {status, rows_loaded, error}} of a run.
sub task_rows {
	my ($run_id) = @_;
	my %t;
	for (mysql('SELECT task_id, status, rows_loaded, IFNULL(error, \'\') FROM '
		   . 'run_task_status WHERE run_id = ' . sq($run_id))) {
		$t{ $_->[0] } = { status => $_->[1], rows_loaded => $_->[2],
				  error => $_->[3] };
	}
	return \%t;
}

# GET .../logs -> the logs array (all lines, up to 10000).
sub run_logs {
	my ($run_id, %q) = @_;
	my $qs = join '&', 'limit=10000', map { "$_=$q{$_}" } sort keys %q;
	my $res = http(GET => "/platform/pipeline/pipeline_run/$run_id/logs?$qs",
		       { token => env('SLUICE_DEMO_TOKEN') });
	croak 'logs: ' . describe($res) unless $res->{status} == 200;
	return $res->{json}{data}{logs};
}

sub log_messages {
	my ($run_id, %q) = @_;
	return map { "$_->{level} " . ($_->{task_id} // '-') . " $_->{message}" }
		@{ run_logs($run_id, %q) };
}

sub work_pid {
	my $f = env('SLUICE_WORK_PID');
	open my $fh, '<', $f or return undef;
	my $p = <$fh> // '';
	$p =~ s/\s+//g;
	return $p =~ /^\d+$/ ? $p : undef;
}

# The live child processes of $ppid (sluice work's run supervisors, a
# supervisor's task process).
sub children_of {
	my ($ppid) = @_;
	opendir my $dh, '/proc' or return ();
	return grep { my $st = proc_stat($_); $st && $st->{ppid} == $ppid && $st->{state} !~ /^[ZX]/ }
		grep { /^\d+$/ } readdir $dh;
}

sub restart_work {
	for my $cmd (qw(work-stop work-start)) {
		my $r = dev($cmd);
		croak "scripts/dev $cmd: $r->{err}" if $r->{exit};
	}
}

# Run sluice work with these config settings for the rest of the file:
# the config is put back and sluice work restarted at exit.
my $ORIGINAL_CONF;
sub with_work_conf {
	my (@kv) = @_;
	$ORIGINAL_CONF //= conf_read();
	conf_write(conf_with(conf_read(), @kv));
	restart_work();
}

my @EXTRA;

# Another sluice work process on the same config (as a second host would
# run one), with the config's keys changed by %kv (host_name, say); returns
# its pid.
sub start_extra_work {
	my (%kv) = @_;
	my $log = env('SLUICE_VAR') . "/log/work-extra-$$.log";
	my $conf = env('SLUICE_CONF');
	if (%kv) {
		my $text = conf_with(conf_read(), %kv);
		$conf = env('SLUICE_VAR') . "/work-extra-$$.conf";
		open my $fh, '>:raw', $conf or croak "cannot write $conf: $!";
		chmod 0600, $conf;
		print {$fh} $text;
		close $fh or croak "cannot write $conf: $!";
	}
	my $pid = fork // croak "fork: $!";
	if (!$pid) {
		POSIX::setsid();
		open STDIN, '<', '/dev/null';
		open STDOUT, '>>', $log or POSIX::_exit(126);
		open STDERR, '>&', \*STDOUT;
		{ exec env('SLUICE_BIN'), 'work', '-c', $conf }
		POSIX::_exit(127);
	}
	push @EXTRA, $pid;
	return $pid;
}

sub stop_extra_work {
	my ($pid, $sig) = @_;
	kill $sig // 'TERM', $pid;
	my $deadline = time + 40;
	while (time < $deadline) {
		last if waitpid($pid, WNOHANG) == $pid;
		sleep 0.1;
	}
	kill 'KILL', $pid if proc_alive($pid);
	waitpid($pid, 0);
	@EXTRA = grep { $_ != $pid } @EXTRA;
}

sub tap_pid_file {
	return env('SLUICE_VAR') . "/tmp-tap-$$-" . ++$seq . '.pid';
}

END {
	local $?;
	stop_extra_work($_, 'KILL') for @EXTRA;
	unlink env('SLUICE_VAR') . "/work-extra-$$.conf";
	if (defined $ORIGINAL_CONF) {
		conf_write($ORIGINAL_CONF);
		restart_work();
	}
}

1;
