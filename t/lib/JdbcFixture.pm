package JdbcFixture;

# Set-up shared by the jdbc runner tests (t/api/65-69): the source databases
# the test stack starts (a MariaDB on the instance's port + 1, a PostgreSQL
# on port + 2), connections and pipelines made through the API, runs
# executed and waited for through the API, and reads of the warehouse (the
# stack's own MariaDB).  Source rows are written with SQL: they are the
# world the connector reads, not what is under test.

use strict;
use warnings;

use Carp qw(croak);
use Exporter qw(import);
use Time::HiRes qw(sleep time);

use SluiceTest;

our @EXPORT = qw(
	src_sql pg_sql wh_sql wh_table_sig src_table_sig pg_table_sig
	make_connection make_pipeline execute_run wait_run run_and_wait run_logs
	job_bookmark uniq_tag
);

sub uniq_tag { return lc(sprintf('%x%x', $$, int(time * 1000) % 0xffffff)) }

sub _sh {
	my ($cmdline, $input, $what) = @_;
	my $r = run_cmd([ 'sh', '-c', $cmdline ], stdin => $input, timeout => 300);
	croak "$what failed (exit $r->{exit}): $r->{err}" if $r->{exit};
	return $r->{out};
}

sub _rows {
	my ($out) = @_;
	return map { [ split /\t/, $_, -1 ] } split /\n/, $out;
}

# src_sql($sql): on the source MariaDB (database `source`, as root).
sub src_sql {
	my ($sql) = @_;
	my $out = _sh(env('SLUICE_SOURCE_MYSQL') . ' -N -B', $sql, 'source SQL');
	return _rows($out) if wantarray;
	$out =~ s/\n\z//;
	return $out;
}

# pg_sql($sql): on the source PostgreSQL (database and role `source`).
sub pg_sql {
	my ($sql) = @_;
	my $out = _sh(env('SLUICE_PSQL') . ' -At -F "	"', $sql, 'PostgreSQL SQL');
	return _rows($out) if wantarray;
	$out =~ s/\n\z//;
	return $out;
}

# wh_sql($sql): on the warehouse (the stack's MariaDB).
sub wh_sql {
	my ($sql) = @_;
	my $out = _sh(env('SLUICE_MYSQL') . ' -N -B', $sql, 'warehouse SQL');
	return _rows($out) if wantarray;
	$out =~ s/\n\z//;
	return $out;
}

# "count md5" of a MariaDB table's rows ($expr per row, ordered by $order).
sub _sig_sql {
	my ($table, $expr, $order) = @_;
	return "SET SESSION group_concat_max_len = 1073741824, time_zone = '+00:00'; "
		. "SELECT COUNT(*), IFNULL(MD5(GROUP_CONCAT($expr ORDER BY $order "
		. "SEPARATOR '#')), '-') FROM $table";
}

sub wh_table_sig {
	my ($table, $expr, $order) = @_;
	return scalar wh_sql(_sig_sql($table, $expr, $order));
}

sub src_table_sig {
	my ($table, $expr, $order) = @_;
	return scalar src_sql(_sig_sql($table, $expr, $order));
}

sub pg_table_sig {
	my ($table, $expr, $order) = @_;
	return scalar pg_sql("SELECT COUNT(*), COALESCE(MD5(string_agg($expr, '#' "
		. "ORDER BY $order)), '-') FROM $table");
}

# make_connection(token, plugin => mariadb|postgres[, port, password]):
# connection_id.
sub make_connection {
	my ($token, %o) = @_;
	my $pg = ($o{plugin} // 'mariadb') eq 'postgres';
	my $res = http(POST => '/platform/connections', { token => $token, json => {
		name => 'jdbc-' . uniq_tag() . '-' . int(rand(1e6)),
		plugin => $o{plugin} // 'mariadb',
		host => '127.0.0.1',
		port => 0 + ($o{port} // env($pg ? 'SLUICE_PG_PORT' : 'SLUICE_SOURCE_PORT')),
		database => 'source',
		user => 'source',
		password => $o{password} // env($pg ? 'SLUICE_PG_PASSWORD' : 'SLUICE_SOURCE_PASSWORD'),
	} });
	croak 'POST /platform/connections: ' . describe($res) unless $res->{status} == 201;
	return $res->{json}{connection_id};
}

# make_pipeline(token, connection_id, table, dest_schema, dest_table,
#   load_type, incremental_column_name, incremental_column_type,
#   primary_keys, column_include_list, plugin): {pipeline_id, job_id}.
sub make_pipeline {
	my ($token, %o) = @_;
	my %input = (connector => 'jdbc', plugin => $o{plugin} // 'mariadb',
		connection_id => $o{connection_id}, table_name => $o{table},
		load_type => $o{load_type} // 'full_load');
	for (qw(incremental_column_name incremental_column_type primary_keys
		column_include_list)) {
		$input{$_} = $o{$_} if defined $o{$_};
	}
	my $res = http(POST => '/platform/pipeline', { token => $token, json => {
		name => $o{name} // "jdbc $o{table}", description => 'jdbc runner test',
		cron => undef,
		jobs => [ { input => \%input, output => { plugin => 'mariadb',
			raw => { table_schema => $o{dest_schema},
				 table_name => $o{dest_table} } } } ] } });
	croak 'POST /platform/pipeline: ' . describe($res) unless $res->{status} == 201;
	return { pipeline_id => $res->{json}{pipeline_id},
		 job_id => $res->{json}{jobs}[0]{job_id} };
}

# POST execute: the run_id.
sub execute_run {
	my ($token, $pipeline_id) = @_;
	my $res = http(POST => '/platform/pipeline/execute', { token => $token, json => {
		pipeline_id => $pipeline_id,
		customer_id => env('SLUICE_DEMO_CUSTOMER_ID') } });
	croak 'execute: ' . describe($res) unless $res->{status} == 200;
	return $res->{json}{data}{run_id};
}

# The run as the runs listing shows it, once SUCCESS or FAILED.
sub wait_run {
	my ($token, $pipeline_id, $run_id, $timeout) = @_;
	my $until = time + ($timeout // 120);
	while (time < $until) {
		my $res = http(GET => "/platform/pipeline/$pipeline_id/pipeline_run",
			       { token => $token });
		croak 'runs: ' . describe($res) unless $res->{status} == 200;
		my ($run) = grep { $_->{run_id} eq $run_id } @{ $res->{json}{data}{runs} };
		return $run if $run && $run->{status} =~ /^(SUCCESS|FAILED)\z/;
		sleep 0.2;
	}
	croak "run $run_id did not finish in time";
}

sub run_and_wait {
	my ($token, $pipeline_id, $timeout) = @_;
	my $run_id = execute_run($token, $pipeline_id);
	return wait_run($token, $pipeline_id, $run_id, $timeout);
}

# The log entries of a run, through the API.
sub run_logs {
	my ($token, $run_id) = @_;
	my $res = http(GET => "/platform/pipeline/pipeline_run/$run_id/logs",
		       { token => $token });
	croak 'logs: ' . describe($res) unless $res->{status} == 200;
	return @{ $res->{json}{data}{logs} };
}

# The job's incremental_column_value as GET /platform/pipeline/{id} shows it.
sub job_bookmark {
	my ($token, $pipeline_id) = @_;
	my $res = http(GET => "/platform/pipeline/$pipeline_id", { token => $token });
	croak 'GET pipeline: ' . describe($res) unless $res->{status} == 200;
	return $res->{json}{jobs}[0]{input}{incremental_column_value};
}

1;
