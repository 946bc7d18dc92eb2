#!/usr/bin/perl
# Claims hold cluster-wide.  Galera does not replicate row locks, so two
# `sluice work` on different nodes can both "claim" one row; only the
# certification at COMMIT tells one of them.  With both hosts' work
# running: 30 manual executions of an incremental jdbc pipeline (executed
# through a and b in turn) each run exactly once -- one pipeline_runs row
# per execute, one "run claimed" and one "task started" line per run, every
# source row once in the warehouse -- and 30 uploads with inference are each
# inferred exactly once (one `work started` of storage_infer per dataset in
# the two hosts' logs together).

use strict;
use warnings;

use Test::More;

use SluiceTest;
use ClusterFixture;
use JdbcFixture;
use StorageTest;

my $token = env('SLUICE_DEMO_TOKEN');
my $tag = uniq_tag();
my $src = "claims_$tag";
my $logical = "claims_$tag";
my $schema = wh_schema(env('SLUICE_DEMO_CUSTOMER_ID'), $logical);
my $RUNS = 30;
my $PER = 10;
my @work_logs = map { env("SLUICE_CLUSTER_HOST_${_}_WORK_LOG") } qw(A B);
my %log_start = map { $_ => -s $_ // 0 } @work_logs;

sub work_log_lines {
	my @lines;
	for my $f (@work_logs) {
		open my $fh, '<', $f or next;
		seek $fh, $log_start{$f}, 0;
		push @lines, <$fh>;
	}
	return @lines;
}

# --- pipeline runs ---------------------------------------------------------------
src_sql("CREATE TABLE $src (id INT NOT NULL PRIMARY KEY, note VARCHAR(40) NOT NULL)");
my ($cid, $p) = on_host(a => sub {
	my $c = make_connection($token);
	return ($c, make_pipeline($token, connection_id => $c, table => $src,
		dest_schema => $logical, dest_table => 'items', load_type => 'incremental',
		incremental_column_name => 'id', incremental_column_type => 'int'));
});
my $pid = $p->{pipeline_id};

my (@runs, $bad);
for my $i (1 .. $RUNS) {
	my $lo = ($i - 1) * $PER + 1;
	src_sql("INSERT INTO $src SELECT seq, CONCAT('run $i row ', seq) FROM seq_${lo}_to_" . ($i * $PER));
	my $host = $i % 2 ? 'a' : 'b';
	my $run = on_host($host => sub { run_and_wait($token, $pid, 120) });
	push @runs, $run->{run_id};
	if ($run->{status} ne 'SUCCESS' || $run->{rows_loaded} != $PER) {
		$bad++;
		diag "run $i through $host: " . json_encode($run) if $bad < 4;
	}
}
is($bad // 0, 0, "$RUNS runs: each SUCCESS with its $PER new rows");
is(mysql("SELECT COUNT(*) FROM pipeline_runs WHERE pipeline_id = '$pid'"), $RUNS,
   "one pipeline_runs row per execute ($RUNS)");
is(mysql("SELECT COUNT(DISTINCT id) FROM pipeline_runs WHERE pipeline_id = '$pid' AND status = 'SUCCESS'"),
   $RUNS, 'all of them SUCCESS');

my %claimed = map { $_->[0] => $_->[1] } mysql("SELECT l.run_id, COUNT(*) FROM run_logs l"
	. " JOIN pipeline_runs r ON r.id = l.run_id WHERE r.pipeline_id = '$pid'"
	. " AND l.message LIKE 'run claimed by %' GROUP BY l.run_id");
my %started = map { $_->[0] => $_->[1] } mysql("SELECT l.run_id, COUNT(*) FROM run_logs l"
	. " JOIN pipeline_runs r ON r.id = l.run_id WHERE r.pipeline_id = '$pid'"
	. " AND l.message LIKE 'task started on %' GROUP BY l.run_id");
is_deeply([ grep { ($claimed{$_} // 0) != 1 } @runs ], [], 'every run was claimed exactly once');
is_deeply([ grep { ($started{$_} // 0) != 1 } @runs ], [], 'every run started its task exactly once');
my %by_host;
for (mysql("SELECT l.message FROM run_logs l JOIN pipeline_runs r ON r.id = l.run_id"
	   . " WHERE r.pipeline_id = '$pid' AND l.message LIKE 'run claimed by %'")) {
	$by_host{$1}++ if $_->[0] =~ /run claimed by (sluice-[ab])/;
}
note 'runs claimed per host: ' . join(', ', map { "$_ $by_host{$_}" } sort keys %by_host);

my $total = $RUNS * $PER;
is(wh_sql("SELECT COUNT(*), COUNT(DISTINCT id) FROM `$schema`.`items`"), "$total\t$total",
   "the warehouse holds each of the $total source rows once");
is(wh_sql("SELECT SUM(rows_loaded) FROM pipeline_runs WHERE pipeline_id = '$pid'"), $total,
   "rows_loaded adds up to $total");

# --- uploads with inference ------------------------------------------------------------
my $UPLOADS = 30;
my %dataset;
for my $i (1 .. $UPLOADS) {
	my $name = "claims-$tag-$i.csv";
	my $csv = "id,name,amount\n" . join('', map { "$_,item $_,$_.5\n" } 1 .. $i);
	my $host = $i % 2 ? 'a' : 'b';
	my $res = on_host($host => sub { upload($token, "claims-$tag", [ $name, $csv ]) });
	is($res->{status}, 201, "upload $i through $host") or diag(describe($res)), last;
	$dataset{$i} = dataset_of($res, $name);
}
my @failed;
for my $i (sort { $a <=> $b } keys %dataset) {
	my $ds = wait_dataset($token, $dataset{$i}, 60);
	push @failed, $i unless ($ds->{status} // '') eq 'ready';
}
is_deeply(\@failed, [], "$UPLOADS uploads: every dataset inferred and ready");
my %infer;
for (work_log_lines()) {
	$infer{$1}++ if /msg="work started" .*kind=storage_infer ref=(\S+)/;
}
is_deeply([ grep { ($infer{ $dataset{$_} } // 0) != 1 } sort { $a <=> $b } keys %dataset ], [],
	  'each dataset was inferred by exactly one work process, once');

# --- both hosts' work processes ---------------------------------------------------------
is_deeply([ map { $_->[0] } mysql("SELECT DISTINCT host FROM work_processes ORDER BY host") ],
	  [qw(sluice-a sluice-b)], 'work_processes names both hosts');

done_testing();
