package ConnectorFixture;

# Set-up shared by the connector tests (t/api/7*.t): a pipeline of one or
# more jobs made with POST /platform/pipeline, a run executed through the
# API and awaited until `sluice work` has finished it, its log lines, and
# queries of the warehouse (the test stack's warehouse is its own MariaDB
# server, reached with the same client as the service database).

use strict;
use warnings;

use Carp qw(croak);
use File::Path ();
use Exporter qw(import);
use Test::More ();

use SluiceTest;
use JobsFixture qw(customer_token sql_quote job_state_row);

our @EXPORT = qw(
	make_pipeline run_pipeline run_logs log_text wh_rows wh_count wh_columns
	drop_schema taps_dir storage_area put_file processed_rows
);

# make_pipeline($token, [ {input => {...}, output => {...}} or {input,
#   table_name, table_schema} ]) -> {pipeline_id, job_ids}
sub make_pipeline {
	my ($token, $jobs, %o) = @_;
	my @jobs = map {
		{ input => $_->{input},
		  output => $_->{output} // { plugin => 'mariadb',
			raw => { table_name => $_->{table_name},
				 table_schema => $_->{table_schema} } },
		  (defined $_->{memory_allocated_mb}
			? (memory_allocated_mb => $_->{memory_allocated_mb}) : ()) }
	} @$jobs;
	my $res = http(POST => '/platform/pipeline', { token => $token,
		json => { name => $o{name} // 'connector test', cron => undef,
			  jobs => \@jobs } });
	croak 'POST /platform/pipeline: ' . describe($res) unless $res->{status} == 201;
	return { pipeline_id => $res->{json}{pipeline_id},
		 job_ids => [ map { $_->{job_id} } @{ $res->{json}{jobs} } ] };
}

# Execute the pipeline and wait until its run is SUCCESS or FAILED:
# the run as the run listing shows it (run_id, status, rows_loaded, ...).
sub run_pipeline {
	my ($token, $customer_id, $pid, %o) = @_;
	my $res = http(POST => '/platform/pipeline/execute', { token => $token,
		json => { pipeline_id => $pid, customer_id => $customer_id } });
	croak 'execute: ' . describe($res) unless $res->{status} == 200;
	my $run_id = $res->{json}{data}{run_id};
	my $run;
	wait_until($o{timeout} // 120, sub {
		my $r = http(GET => "/platform/pipeline/$pid/pipeline_run",
			     { token => $token });
		return 0 unless $r->{status} == 200;
		($run) = grep { $_->{run_id} eq $run_id } @{ $r->{json}{data}{runs} };
		return $run && $run->{status} =~ /^(SUCCESS|FAILED)$/;
	}, 0.2) or croak "run $run_id did not finish: last seen "
		. ($run ? $run->{status} : 'nothing');
	return $run;
}

# The run's log lines ({timestamp, level, task_id, message}).
sub run_logs {
	my ($token, $run_id, %q) = @_;
	my $qs = join '&', map { "$_=$q{$_}" } sort keys %q;
	my $res = http(GET => "/platform/pipeline/pipeline_run/$run_id/logs"
		. ($qs ? "?$qs" : ''), { token => $token });
	croak 'logs: ' . describe($res) unless $res->{status} == 200;
	return @{ $res->{json}{data}{logs} };
}

# All messages as one text, "LEVEL message" per line (for diag and like).
sub log_text {
	my ($token, $run_id, %q) = @_;
	return join '', map { "$_->{level} $_->{message}\n" } run_logs($token, $run_id, %q);
}

# Rows of a warehouse query as array refs (NULL as undef).
sub wh_rows {
	my ($sql) = @_;
	my @rows = mysql($sql);
	for my $r (@rows) {
		$_ = ($_ eq 'NULL' ? undef : $_) for @$r;
	}
	return @rows;
}

sub wh_count {
	my ($table) = @_;
	return scalar mysql("SELECT COUNT(*) FROM $table");
}

# {name => {type, nullable, key}} of a warehouse table.
sub wh_columns {
	my ($schema, $table) = @_;
	my %c;
	for my $r (mysql('SELECT COLUMN_NAME, COLUMN_TYPE, IS_NULLABLE, COLUMN_KEY '
		. 'FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = '
		. sql_quote($schema) . ' AND TABLE_NAME = ' . sql_quote($table))) {
		$c{ $r->[0] } = { type => $r->[1], nullable => $r->[2] eq 'YES',
				  key => $r->[3] };
	}
	return \%c;
}

sub drop_schema {
	my ($schema) = @_;
	mysql("DROP DATABASE IF EXISTS `$schema`");
}

sub taps_dir { return env('SLUICE_ROOT') . '/t/fixtures/taps' }

# The customer's storage area (storage_root/customers/<id>), created.
sub storage_area {
	my ($customer_id) = @_;
	my ($root) = conf_read() =~ /^[ \t]*storage_root[ \t]*=[ \t]*(.+?)[ \t]*$/m
		or croak 'no storage_root in the config';
	my $area = "$root/customers/$customer_id";
	File::Path::make_path($area);
	return $area;
}

# put_file($path, $content, $mtime): write a file (folders made), with
# that modification time when given.
sub put_file {
	my ($path, $content, $mtime) = @_;
	(my $dir = $path) =~ s{/[^/]*\z}{};
	File::Path::make_path($dir);
	open my $fh, '>:raw', $path or croak "$path: $!";
	print {$fh} $content;
	close $fh or croak "$path: $!";
	utime($mtime, $mtime, $path) or croak "utime $path: $!" if defined $mtime;
}

# {file_path => [last_modified, size_bytes]} of a job's processed records.
sub processed_rows {
	my ($job_id) = @_;
	return { map { $_->[0] => [ $_->[1], $_->[2] ] } mysql(
		'SELECT file_path, last_modified, size_bytes FROM file_storage_processed '
		. 'WHERE job_id = ' . sql_quote($job_id)) };
}

1;
