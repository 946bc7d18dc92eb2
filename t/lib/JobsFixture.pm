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
	job_state_row task_ids uuid_hyphens
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

sub _uuid {
	my @h = map { sprintf '%04x', int rand 65536 } 1 .. 8;
	return join '_', $h[0] . $h[1], $h[2], '4' . substr($h[3], 1),
		'8' . substr($h[4], 1), $h[5] . $h[6] . $h[7];
}

sub uuid_hyphens { (my $s = $_[0]) =~ tr/_/-/; return $s }

# seed_pipeline(customer_id => ..., jobs => [ {connector, plugin, load_type,
#     incremental_column_name, incremental_column_type, primary_keys,
#     column_include_list, bookmark, state, job_status, input => {...}} ])
# Inserts the pipeline, its jobs, job states and orchestration tasks as
# POST /platform/pipeline stores them.  Returns {pipeline_id, job_ids}.
sub seed_pipeline {
	my (%o) = @_;
	my $pid = _uuid();
	my $cid = $o{customer_id} // env('SLUICE_DEMO_CUSTOMER_ID');
	my @sql = sprintf("INSERT INTO pipelines (id, customer_id, name, created_by) "
		. "VALUES (%s, %s, %s, 'tests\@example.com')", sql_quote($pid),
		sql_quote($cid), sql_quote($o{name} // 'jobs test'));
	my @ids;
	my $i = 0;
	for my $j (@{ $o{jobs} }) {
		my $jid = "${pid}_$i";
		my $conn = $j->{connector} // 'jdbc';
		my %input = (connector => $conn,
			plugin => $j->{plugin} // ($conn eq 'jdbc' ? 'postgres'
				: $conn eq 'singer' ? 'tap-postgres' : 'local'),
			table_name => 'public.orders', %{ $j->{input} || {} });
		$input{prefix} //= 'exports/' if $conn eq 'file_storage';
		my $lt = $j->{load_type} // 'full_load';
		push @sql, sprintf("INSERT INTO jobs (id, pipeline_id, job_index, name, "
			. "connector, input, output, load_type, incremental_column_name, "
			. "incremental_column_type, primary_keys, column_include_list, "
			. "job_status) VALUES (%s, %s, %d, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
			sql_quote($jid), sql_quote($pid), $i, sql_quote("job $i"),
			sql_quote($conn), sql_quote(\%input),
			sql_quote({ plugin => 'mariadb',
				    raw => { table_name => 'orders', table_schema => 'raw' } }),
			sql_quote($lt), sql_quote($j->{incremental_column_name}),
			sql_quote($j->{incremental_column_type}),
			sql_quote($j->{primary_keys}), sql_quote($j->{column_include_list}),
			sql_quote($j->{job_status} // 'PENDING'));
		push @sql, sprintf("INSERT INTO job_state (job_id, incremental_column_value, "
			. "state) VALUES (%s, %s, %s)", sql_quote($jid),
			sql_quote($j->{bookmark}), sql_quote($j->{state}));
		push @sql, sprintf("INSERT INTO orchestration_tasks (pipeline_id, task_id, "
			. "job_id, kind, upstream_task_ids, position) VALUES "
			. "(%s, %s, %s, 'extract_load', '[]', %d)", sql_quote($pid),
			sql_quote("$jid.extract_load"), sql_quote($jid), 2 * $i);
		push @sql, sprintf("INSERT INTO orchestration_tasks (pipeline_id, task_id, "
			. "job_id, kind, upstream_task_ids, position) VALUES "
			. "(%s, %s, %s, 'qualify', %s, %d)", sql_quote($pid),
			sql_quote("$jid.qualify"), sql_quote($jid),
			sql_quote(["$jid.extract_load"]), 2 * $i + 1)
			if $lt eq 'incremental_with_qualify';
		for my $f (@{ $j->{processed} || [] }) {
			push @sql, sprintf("INSERT INTO file_storage_processed (job_id, "
				. "file_path, last_modified, size_bytes) VALUES "
				. "(%s, %s, '2026-01-01 00:00:00', 10)", sql_quote($jid),
				sql_quote($f));
		}
		push @ids, $jid;
		$i++;
	}
	mysql(join(";\n", 'START TRANSACTION', @sql, 'COMMIT'));
	return { pipeline_id => $pid, job_ids => \@ids };
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
