package JobsFixture;

# Set-up shared by the job tests (t/api/2*.t): customers and tokens, and
# pipelines whose jobs the tests then change through the API.  Rows the API
# cannot make (a bookmark the runner would have written, a RUNNING job,
# processed files) are written with SQL here, in set-up only: every
# assertion of the tests is on what the API answers and what the database
# then holds.

use strict;
use warnings;

use Carp qw(croak);
use Exporter qw(import);

use SluiceTest;

our @EXPORT = qw(
	customer_token sql_quote seed_pipeline job_row
	job_state_row task_ids uuid_hyphens job_get
);

my @RW = ('PLATFORM.READ', 'PLATFORM.WRITE');

# A token for customer $name (created when missing): ($token, $customer_id).
sub customer_token {
	my ($name) = @_;
	my $r = run_cmd([ env('SLUICE_BIN'), 'customer', 'add', $name,
			  '--if-missing', '-c', env('SLUICE_CONF') ]);
	croak "customer add $name: $r->{err}" if $r->{exit};
	(my $id = $r->{out}) =~ s/\s+\z//;
	return (token(customer => $name, permissions => [@RW]), $id);
}

sub sql_quote {
	my ($v) = @_;
	return 'NULL' unless defined $v;
	$v = json_encode($v) if ref $v;
	(my $q = $v) =~ s/(['\\])/\\$1/g;
	return "'$q'";
}

sub uuid_hyphens { (my $s = $_[0]) =~ tr/_/-/; return $s }

# seed_pipeline(token => $t, jobs => [ {connector, plugin, load_type,
#     incremental_column_name, incremental_column_type, primary_keys,
#     column_include_list, input => {...},
#     and set-up beyond the API: bookmark, state, processed => [paths],
#     job_status} ])
# Creates the pipeline with POST /platform/pipeline, then writes the
# set-up rows.  Returns {pipeline_id, job_ids}.
sub seed_pipeline {
	my (%o) = @_;
	my (@jobs, @sql);
	for my $j (@{ $o{jobs} }) {
		my $conn = $j->{connector} // 'jdbc';
		my %input = (connector => $conn,
			plugin => $j->{plugin} // ($conn eq 'jdbc' ? 'postgres'
				: $conn eq 'singer' ? 'tap-postgres' : 'local'),
			%{ $j->{input} || {} });
		if ($conn eq 'file_storage') {
			$input{prefix} //= 'exports/';
		} else {
			$input{table_name} //= 'public.orders';
		}
		for (qw(load_type incremental_column_name incremental_column_type
			primary_keys column_include_list)) {
			$input{$_} = $j->{$_} if defined $j->{$_};
		}
		push @jobs, { input => \%input, output => { plugin => 'mariadb',
			raw => { table_name => 'orders', table_schema => 'raw' } } };
	}
	my $res = http(POST => '/platform/pipeline', { token => $o{token} // croak('token'),
		json => { name => $o{name} // 'jobs test', description => 'set-up',
			  cron => undef, jobs => \@jobs } });
	croak 'POST /platform/pipeline: ' . describe($res) unless $res->{status} == 201;
	my $pid = $res->{json}{pipeline_id};
	my @ids = map { $_->{job_id} } @{ $res->{json}{jobs} };
	for my $i (0 .. $#ids) {
		my ($j, $jid) = ($o{jobs}[$i], sql_quote($ids[$i]));
		push @sql, sprintf('UPDATE job_state SET incremental_column_value = %s, '
			. 'state = %s WHERE job_id = %s', sql_quote($j->{bookmark}),
			sql_quote($j->{state}), $jid)
			if defined $j->{bookmark} || defined $j->{state};
		push @sql, sprintf('UPDATE jobs SET job_status = %s WHERE id = %s',
			sql_quote($j->{job_status}), $jid) if defined $j->{job_status};
		push @sql, map { sprintf("INSERT INTO file_storage_processed (job_id, "
			. "file_path, last_modified, size_bytes) VALUES "
			. "(%s, %s, '2026-01-01 00:00:00', 10)", $jid, sql_quote($_)) }
			@{ $j->{processed} || [] };
	}
	mysql(join(";\n", @sql)) if @sql;
	return { pipeline_id => $pid, job_ids => \@ids };
}

# The job as GET /platform/pipeline/{id} shows it.
sub job_get {
	my ($token, $job_id) = @_;
	(my $pid = $job_id) =~ s/_\d+\z//;
	my $res = http(GET => "/platform/pipeline/$pid", { token => $token });
	croak 'GET pipeline: ' . describe($res) unless $res->{status} == 200;
	my ($job) = grep { $_->{job_id} eq $job_id } @{ $res->{json}{jobs} };
	return $job;
}

# The jobs row of $job_id as a hash (JSON columns decoded).
sub job_row {
	my ($job_id) = @_;
	my @cols = qw(load_type incremental_column_name incremental_column_type
		primary_keys column_include_list memory_allocated_mb job_status);
	my @rows = mysql('SELECT ' . join(', ', map { "IFNULL($_, '<NULL>')" } @cols)
		. ' FROM jobs WHERE id = ' . sql_quote($job_id));
	return undef unless @rows;
	my %h;
	@h{@cols} = @{ $rows[0] };
	for (keys %h) {
		$h{$_} = undef if $h{$_} eq '<NULL>';
	}
	for (qw(primary_keys column_include_list)) {
		$h{$_} = json_decode($h{$_}) if defined $h{$_};
	}
	return \%h;
}

# {incremental_column_value, state} of the job's job_state row.
sub job_state_row {
	my ($job_id) = @_;
	my @rows = mysql("SELECT IFNULL(incremental_column_value, '<NULL>'), "
		. "IFNULL(state, '<NULL>') FROM job_state WHERE job_id = "
		. sql_quote($job_id));
	return undef unless @rows;
	my ($v, $s) = @{ $rows[0] };
	return { incremental_column_value => $v eq '<NULL>' ? undef : $v,
		 state => $s eq '<NULL>' ? undef : json_decode($s) };
}

# The pipeline's orchestration task ids by position.
sub task_ids {
	my ($pipeline_id) = @_;
	return map { $_->[0] } mysql('SELECT task_id FROM orchestration_tasks '
		. 'WHERE pipeline_id = ' . sql_quote($pipeline_id) . ' ORDER BY position');
}

1;
