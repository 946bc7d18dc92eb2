#!/usr/bin/perl
# bench/chaos.pl - the chaos soak's driver (bench/chaos.sh starts the stack
# and runs it with the instance's SLUICE_* variables).
#
# For DURATION seconds it drives mixed load through the API:
#   rag       datasets filled in two or three batches, then questions, half
#             of them read back with ?wait, half polled;
#   uploads   CSV uploads (schema inference) under chaos/, which a
#             file_storage pipeline on a one-minute cron loads; now and
#             then a warehouse table with one dataset linked (a link load);
#   source    rows appended to a source MariaDB table that a jdbc
#             incremental pipeline on a one-minute cron loads;
#   slow      uploads trickling in and long polls on a question nobody
#             answers, the whole time;
#   manual    a jdbc full_load pipeline executed by hand every few seconds;
#   probe     GET /platform/pipelines five times a second, each answer kept
#             with its time (the API's availability);
# and every 10 to 30 s kills (-9) a random serve worker, a random child of
# sluice work, or sluice work itself (which is then started again, as
# systemd would); MariaDB is restarted twice.
#
# On the local Galera cluster (`scripts/dev cluster env` sets
# SLUICE_CLUSTER_URL; bench/cluster.sh) the load goes through nginx to both
# hosts and the faults are the cluster's instead: node 2 (host b's) is
# killed -9 and started again 30 s later (it rejoins by IST); host b's
# sluice work is killed -9 and started again 20 s later (it takes back its
# own dead process's work at once); host a's sluice serve is stopped for the
# rest of the load; and host b's sluice work is killed -9 once more and
# left dead, so that host a must take over its runs and work items by their
# heartbeats alone.  The checks then also compare the three nodes.
#
# Then it stops the load, lets the work drain, runs each pipeline once more,
# and checks: every work item finished (done or failed, none queued or
# running), each exactly once (one queue row each, the datasets, uploads,
# links and questions all settled with the counts posted), no duplicate
# warehouse rows, no question lost, nothing stuck (no run, dataset, upload
# or staging table left in flight).  Prints the figures; exit 1 when a
# check failed.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../t/lib";
use JSON::PP ();
use List::Util qw(min);
use POSIX qw(WNOHANG);
use Time::HiRes qw(time sleep);

use JdbcFixture qw(src_sql wh_sql make_connection);
use SluiceTest;
use StorageTest qw(upload multipart_body);

my $DURATION = $ENV{DURATION} // 600;
my $DRAIN = $ENV{DRAIN} // 300;
my $DIR = $ENV{CHAOS_DIR} // die "CHAOS_DIR is not set\n";
my $TOKEN = env('SLUICE_DEMO_TOKEN');
my $BASIC = env('SLUICE_DEMO_BASIC');
my $CID = env('SLUICE_DEMO_CUSTOMER_ID');
my $J = JSON::PP->new->canonical;
# The cluster: requests go through nginx's upstream to both hosts.
my $CLUSTER = defined $ENV{SLUICE_CLUSTER_URL};
$ENV{SLUICE_URL} = $ENV{SLUICE_CLUSTER_URL} if $CLUSTER;
my $T0 = time;
my $END = $T0 + $DURATION;
my @failures;

sub say_ { printf "[%6.1f s] %s\n", time - $T0, join '', @_ }
sub check {
	my ($ok, $what) = @_;
	printf "  %-4s %s\n", $ok ? 'ok' : 'FAIL', $what;
	push @failures, $what unless $ok;
	return $ok;
}

# One line of what a load process did, for the checks at the end.
sub record {
	my ($file, %r) = @_;
	open my $fh, '>>', "$DIR/$file.jsonl" or die "$file: $!";
	print {$fh} $J->encode(\%r), "\n";
	close $fh;
}

sub records {
	my ($file) = @_;
	open my $fh, '<', "$DIR/$file.jsonl" or return ();
	return map { $J->decode($_) } <$fh>;
}

# A request that is retried while the service is briefly away (a killed
# worker: 502; MariaDB restarting: 503; a connection reset: 599).  Only
# for requests that may safely be repeated.
sub calm {
	my ($method, $path, $o) = @_;
	my $res;
	for my $try (1 .. 60) {
		$res = http($method, $path, { %$o, timeout => 40 });
		return $res unless $res->{status} >= 500;
		sleep 0.5;
	}
	return $res;
}

# --- the load processes ---------------------------------------------------------------

sub rag_loop {
	my ($n) = @_;
	my $k = 0;
	while (time < $END) {
		$k++;
		my $res = calm(POST => '/dataset', { basic => $BASIC, json => { name => "chaos-$n-$k" } });
		next unless $res->{status} == 201;
		my $ds = $res->{json}{dataset_id};
		my ($sure, $maybe) = (0, 0);
		for my $b (1 .. 2 + int rand 2) {
			my $count = 40 + int rand 80;
			my @docs = map { { text => "Chaos document $n-$k-$b-$_: the river carries "
				. "silt and salmon past the mill at dawn, number $_.",
				metadata => { source => "c$n-$k-$b-$_.txt" } } } 1 .. $count;
			# Not retried: a batch answered 5xx may or may not be stored.
			my $r = http(POST => "/dataset/$ds/documents",
				     { basic => $BASIC, json => { documents => \@docs }, timeout => 40 });
			if ($r->{status} == 202) { $sure += $count } else { $maybe += $count }
		}
		record('rag', dataset => $ds, sure => $sure, maybe => $maybe);
		my $ok = wait_until(120, sub {
			my $g = calm(GET => "/dataset/$ds", { basic => $BASIC });
			($g->{json}{status} // '') eq 'success';
		}, 0.5);
		next unless $ok;
		for my $q (1 .. 3) {
			my $p = calm(POST => "/dataset/$ds/question",
				     { basic => $BASIC, json => { question => "where is the salmon $q?" } });
			next unless $p->{status} == 200;
			my $qid = $p->{json}{question_id};
			record('questions', dataset => $ds, question => $qid, wait => $q % 2);
			calm(GET => "/dataset/$ds/question/$qid?wait=10", { basic => $BASIC }) if $q % 2;
		}
	}
}

sub csv {
	my ($rows, $tag) = @_;
	return "id,name,amount\n" . join '', map { "$_,$tag-$_," . ($_ % 997) . ".25\n" } 1 .. $rows;
}

sub upload_loop {
	my $k = 0;
	while (time < $END) {
		$k++;
		my $rows = 50 + int rand 2000;
		my $name = "u$k-$$.csv";
		my $res = upload($TOKEN, 'chaos', [ $name, csv($rows, "u$k") ]);
		if ($res->{status} == 201) {
			my $dsid = $res->{json}{files}[0]{dataset_id};
			record('uploads', dataset => $dsid, rows => $rows, file => $name);
			link_one($dsid, $rows, $k) if $k % 4 == 0;
		} else {
			record('uploads_unsure', file => $name, status => $res->{status}, rows => $rows);
		}
		sleep 1 + rand 2;
	}
}

# A warehouse table and the dataset linked to it, once inferred.
sub link_one {
	my ($dsid, $rows, $k) = @_;
	wait_until(60, sub {
		my $g = calm(GET => "/storage-explorer/datasets/$dsid", { token => $TOKEN });
		($g->{json}{status} // '') =~ /^(ready|failed)$/;
	}, 0.5) or return;
	my $t = calm(POST => '/storage-explorer/tables', { token => $TOKEN, json => {
		table_name => "chaos_t${k}_$$", columns => [
			{ name => 'id', type => 'BIGINT' }, { name => 'name', type => 'VARCHAR(64)' },
			{ name => 'amount', type => 'DECIMAL(10,2)' } ] } });
	return unless $t->{status} == 201;
	my $tid = $t->{json}{table_id};
	my $l = http(POST => "/storage-explorer/tables/$tid/datasets/$dsid",
		     { token => $TOKEN, timeout => 40 });
	record('links', table => $tid, dataset => $dsid, rows => $rows, status => $l->{status},
	       wh => $t->{json}{schema_name} // '', table_name => "chaos_t${k}_$$");
}

sub source_loop {
	my $next = 1;
	while (time < $END) {
		my $n = 20 + int rand 200;
		eval { src_sql("INSERT INTO chaos_src (v) SELECT CONCAT('v', seq) FROM seq_1_to_$n"); 1 }
			and $next += $n;
		sleep 2;
	}
}

# Two slow uploads and two long polls, again and again.
sub slow_loop {
	my ($qds, $qid) = @_;
	while (time < $END) {
		my @s;
		for (1 .. 2) {
			my $s = eval { StorageTest::open_upload_stream($TOKEN, 'slow', 1 << 20,
				'multipart/form-data; boundary=zz') } or next;
			print {$s} "--zz\r\nContent-Disposition: form-data; name=\"file\"; "
				. "filename=\"slow.csv\"\r\n\r\na,b\n";
			push @s, $s;
		}
		my $polls = start_requests(clients => 2, requests => 1,
			path => "/dataset/$qds/question/$qid?wait=20",
			opts => { basic => $BASIC, timeout => 60 });
		for (1 .. 40) {
			print {$_} "1,2\n" for @s;
			sleep 0.5;
		}
		close $_ for @s;
		$polls->finish;
	}
}

# A full_load pipeline run by hand: 409 while its last run is active.
sub manual_loop {
	my ($pid) = @_;
	while (time < $END) {
		my $res = http(POST => '/platform/pipeline/execute', { token => $TOKEN, timeout => 40,
			json => { pipeline_id => $pid, customer_id => $CID } });
		record('manual', status => $res->{status}, run => $res->{json}{data}{run_id} // '');
		sleep 3 + rand 3;
	}
}

# The API's availability: one read every 0.2 s, its status and time kept.
sub probe_loop {
	while (time < $END) {
		my $t = time;
		my $res = http(GET => '/platform/pipelines', { token => $TOKEN, timeout => 10 });
		record('probe', t => sprintf('%.2f', $t - $T0), status => $res->{status},
		       ms => int((time - $t) * 1000));
		sleep 0.2;
	}
}

# --- the chaos ----------------------------------------------------------------------------

sub children_of {
	my ($pid) = @_;
	opendir my $d, '/proc' or return ();
	return grep { my $st = proc_stat($_); $st && $st->{ppid} == $pid && $st->{state} !~ /^[ZX]/ }
		grep { /^\d+$/ } readdir $d;
}

sub work_pid {
	open my $fh, '<', env('SLUICE_WORK_PID') or return undef;
	my $p = <$fh> // '';
	$p =~ s/\s+//g;
	return $p =~ /^\d+$/ ? $p : undef;
}

sub killer {
	my %kills;
	my @db_restarts = ($T0 + $DURATION * 0.3, $T0 + $DURATION * 0.7);
	while (time < $END) {
		sleep 10 + rand 20;
		last if time >= $END;
		if (@db_restarts && time >= $db_restarts[0]) {
			shift @db_restarts;
			my $t = time;
			dev('db-stop');
			sleep 3;
			my $r = dev('db-start');
			say_ sprintf('MariaDB restarted (down %.1f s)%s', time - $t,
				     $r->{exit} ? " FAILED: $r->{err}" : '');
			$kills{'mariadb restart'}++;
			next;
		}
		my $what = (qw(worker child supervisor))[int rand 3];
		if ($what eq 'worker') {
			my @w = worker_pids();
			next unless @w;
			my $v = $w[int rand @w];
			kill 'KILL', $v and $kills{'serve worker'}++;
			say_ "kill -9 serve worker $v";
		} elsif ($what eq 'child') {
			my $wp = work_pid() or next;
			my @c = children_of($wp);
			if (!@c) { $what = 'supervisor' } else {
				my $v = $c[int rand @c];
				kill 'KILL', $v and $kills{'work child'}++;
				say_ "kill -9 child $v of sluice work";
				next;
			}
		}
		if ($what eq 'supervisor') {
			my $wp = work_pid() or next;
			kill 'KILL', $wp and $kills{'sluice work'}++;
			say_ "kill -9 sluice work $wp; starting it again";
			my $r = dev('work-start');
			say_ "  work-start failed: $r->{err}" if $r->{exit};
		}
	}
	record('kills', %kills);
}

# A statement on node $n of the cluster: rows as array refs.
sub mysql_node {
	my ($n, $sql) = @_;
	my $r = run_cmd(['sh', '-c', env("SLUICE_CLUSTER_NODE${n}_MYSQL") . ' -N -B -e "$1"', 'sh', $sql]);
	return () if $r->{exit};
	return map { [ split /\t/, $_, -1 ] } split /\n/, $r->{out};
}

# scripts/dev cluster <what> <which> -> run_cmd result.
sub cluster {
	return run_cmd([ env('SLUICE_DEV'), 'cluster', @_ ], timeout => 600);
}

sub node_state {
	my ($n) = @_;
	my $r = run_cmd(['sh', '-c', env("SLUICE_CLUSTER_NODE${n}_MYSQL") . ' -N -B -e "$1"', 'sh',
			 "SHOW GLOBAL STATUS LIKE 'wsrep_local_state_comment'"]);
	return $r->{exit} ? 'down' : (split /\t/, $r->{out})[1] =~ s/\s+//gr;
}

# One fault of the cluster, from start to recovery, for the report.
sub event {
	my ($what, $t0, $t1) = @_;
	say_ sprintf('%s: %.1f s to %.1f s', $what, $t0 - $T0, $t1 - $T0);
	record('events', what => $what, from => sprintf('%.1f', $t0 - $T0),
	       to => sprintf('%.1f', $t1 - $T0));
}

sub killer_cluster {
	my @plan = ([ 0.15, 'node' ], [ 0.35, 'work' ], [ 0.55, 'serve' ], [ 0.75, 'work-for-good' ]);
	for my $step (@plan) {
		my ($at, $what) = @$step;
		sleep 0.2 while time < $T0 + $DURATION * $at;
		my $t = time;
		if ($what eq 'node') {
			my $r = cluster('node-kill', 2);
			say_ "kill -9 of node 2 (host b's)" . ($r->{exit} ? " FAILED: $r->{err}" : '');
			sleep 30;
			$r = cluster('node-start', 2);
			say_ '  node-start 2 failed: ' . $r->{err} if $r->{exit};
			wait_until(300, sub { node_state(2) eq 'Synced' }, 0.2);
			event('node 2 killed -9, started again 30 s later, until Synced (IST)', $t, time);
			my $ist = grep { /IST received|Receiving IST|IST request/ }
				split /\n/, SluiceTest::_slurp(env('SLUICE_CLUSTER_NODE2_LOG'));
			record('ist', lines => $ist);
		} elsif ($what eq 'work') {
			my $r = cluster('work-kill', 'b');
			say_ "kill -9 of host b's sluice work" . ($r->{exit} ? " FAILED: $r->{err}" : '');
			sleep 20;
			$r = cluster('work-start', 'b');
			say_ '  work-start b failed: ' . $r->{err} if $r->{exit};
			event("host b's sluice work killed -9, started again 20 s later", $t, time);
		} elsif ($what eq 'serve') {
			my $r = cluster('serve-stop', 'a');
			say_ "host a's sluice serve stopped for the rest of the load"
				. ($r->{exit} ? " FAILED: $r->{err}" : '');
			event("host a's sluice serve stopped (stop took)", $t, time);
			record('serve_stopped', at => sprintf('%.1f', $t - $T0));
		} else {
			# When it holds something: an item or a run that host a must take over.
			my %held;
			wait_until(90, sub {
				%held = map { @$_ } mysql("SELECT 'items', COUNT(*) FROM work_queue WHERE "
					. "status = 'running' AND claimed_by LIKE 'sluice-b:%' UNION ALL SELECT "
					. "'runs', COUNT(*) FROM pipeline_runs WHERE status = 'RUNNING' AND "
					. "claimed_by LIKE 'sluice-b:%'");
				$held{items} + $held{runs} > 0 }, 0.05);
			record('b_held', %held);
			$t = time;
			my $r = cluster('work-kill', 'b');
			say_ "kill -9 of host b's sluice work, left dead: host a takes over by heartbeat"
				. ($r->{exit} ? " FAILED: $r->{err}" : '');
			record('work_dead', at => sprintf('%.1f', $t - $T0));
		}
	}
}

# --- set-up ---------------------------------------------------------------------------------

say_ "chaos soak: $DURATION s of load, then up to $DRAIN s to drain";
src_sql('DROP TABLE IF EXISTS chaos_src; CREATE TABLE chaos_src (id INT AUTO_INCREMENT '
	. 'PRIMARY KEY, v VARCHAR(32), at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3))');
src_sql('DROP TABLE IF EXISTS chaos_fixed; CREATE TABLE chaos_fixed (id INT PRIMARY KEY, '
	. 'v VARCHAR(32)); INSERT INTO chaos_fixed SELECT seq, CONCAT(\'f\', seq) FROM seq_1_to_500');
my $conn = make_connection($TOKEN);
my %pipelines;
for my $p (
	[ jdbc => { connector => 'jdbc', plugin => 'mariadb', connection_id => $conn,
		    table_name => 'chaos_src', load_type => 'incremental',
		    incremental_column_name => 'id', incremental_column_type => 'int' }, 'chaos_jdbc' ],
	[ files => { connector => 'file_storage', plugin => 'local', prefix => 'chaos/' },
	  'chaos_files' ],
	[ manual => { connector => 'jdbc', plugin => 'mariadb', connection_id => $conn,
		      table_name => 'chaos_fixed', load_type => 'full_load' }, 'chaos_manual' ],
) {
	my ($name, $in, $table) = @$p;
	my $res = http(POST => '/platform/pipeline', { token => $TOKEN, json => {
		name => "chaos $name", cron => $name eq 'manual' ? '0 0 1 1 *' : '* * * * *',
		jobs => [ { input => $in,
		output => { plugin => 'mariadb', raw => { table_schema => 'chaos',
			    table_name => $table } } } ] } });
	die 'pipeline: ' . describe($res) unless $res->{status} == 201;
	$pipelines{$name} = { id => $res->{json}{pipeline_id}, table => $table };
}
# The question the long polls wait on: nobody answers it.
my $qres = http(POST => '/dataset', { basic => $BASIC, json => { name => 'chaos-polls' } });
my $qds = $qres->{json}{dataset_id};
my $qid = mysql('SELECT UUID()');
mysql("INSERT INTO rag_questions (id, dataset_id, asked_by_user_id, question_text, params) "
      . "SELECT '$qid', '$qds', id, 'never answered', '{}' FROM api_users WHERE name = 'demo'");

my %procs = (rag1 => sub { rag_loop(1) }, rag2 => sub { rag_loop(2) },
	     uploads => \&upload_loop, source => \&source_loop,
	     slow => sub { slow_loop($qds, $qid) },
	     manual => sub { manual_loop($pipelines{manual}{id}) }, probe => \&probe_loop,
	     killer => $CLUSTER ? \&killer_cluster : \&killer);
my %pid;
for my $name (sort keys %procs) {
	my $p = fork // die "fork: $!";
	if (!$p) {
		srand($$ ^ time);
		eval { $procs{$name}->(); 1 } or print STDERR "$name died: $@";
		POSIX::_exit(0);
	}
	$pid{$name} = $p;
}
say_ 'load and chaos running: ' . join(', ', sort keys %procs);
waitpid($_, 0) for values %pid;
say_ 'load stopped';

# --- drain ------------------------------------------------------------------------------------

if ($CLUSTER) {
	# Host b's sluice work stays dead until its work was taken over.
	cluster('serve-start', 'a');
} else {
	dev('db-start');
	dev('work-start') unless work_pid() && proc_alive(work_pid());
}
mysql("DELETE FROM rag_questions WHERE id = '$qid'");
my $t_drain = time;
my $drained = wait_until($DRAIN, sub {
	mysql("SELECT (SELECT COUNT(*) FROM work_queue WHERE status IN ('queued', 'running')) + "
	      . "(SELECT COUNT(*) FROM pipeline_runs WHERE status IN ('CREATED', 'RUNNING'))") == 0;
}, 1);
say_ sprintf('drained in %.0f s', time - $t_drain);
if ($CLUSTER) {
	my $r = cluster('work-start', 'b');
	say_ 'work-start b failed: ' . $r->{err} if $r->{exit};
}
# Each pipeline once more, now that nothing is killed: their tables must
# end complete.
for my $name (sort keys %pipelines) {
	my $p = $pipelines{$name};
	mysql("UPDATE pipelines SET paused = 1, next_run_at = NULL WHERE id = '$p->{id}'");
	my $res = calm(POST => '/platform/pipeline/execute', { token => $TOKEN,
		json => { pipeline_id => $p->{id}, customer_id => $CID } });
	my $run = $res->{json}{data}{run_id} // '';
	wait_until(300, sub { mysql("SELECT status FROM pipeline_runs WHERE id = '$run'")
		=~ /SUCCESS|FAILED/ }, 1);
	$p->{last} = mysql("SELECT status FROM pipeline_runs WHERE id = '$run'");
}

# --- checks -----------------------------------------------------------------------------------

my @rag = records('rag');
my @questions = records('questions');
my @uploads = records('uploads');
my @links = records('links');
my ($kills) = records('kills');
my %q = map { $_->[0] => $_->[1] } mysql("SELECT status, COUNT(*) FROM work_queue GROUP BY status");

print "\n== what happened\n";
printf "  %-28s %s\n", 'duration', "$DURATION s of load";
printf "  %-28s %s\n", "kills ($_)", $kills->{$_} for sort keys %{ $kills || {} };
printf "  %-28s %d\n", 'datasets (rag)', scalar @rag;
printf "  %-28s %d\n", 'documents posted (202)', eval { my $s = 0; $s += $_->{sure} for @rag; $s };
printf "  %-28s %d\n", 'questions', scalar @questions;
printf "  %-28s %d\n", 'uploads (201)', scalar @uploads;
my %ust;
$ust{ $_->{status} }++ for records('uploads_unsure');
printf "  %-28s %s\n", 'uploads answered otherwise', join(', ', map { "$_ $ust{$_}" } sort keys %ust) || 0;
printf "  %-28s %d\n", 'links', scalar @links;
printf "  %-28s %s\n", 'work items by status', join ', ', map { "$_ $q{$_}" } sort keys %q;
my @logs = $CLUSTER ? map { env("SLUICE_CLUSTER_HOST_${_}_SERVE_LOG"), env("SLUICE_CLUSTER_HOST_${_}_WORK_LOG") }
	qw(A B) : (env('SLUICE_SERVE_LOG'), env('SLUICE_WORK_LOG'));
my $retries = 0;
$retries += () = SluiceTest::_slurp($_) =~ /msg="transaction retried"/g for @logs;
printf "  %-28s %d\n", 'transaction retries logged', $retries;
my @manual = records('manual');
my %mst;
$mst{ $_->{status} }++ for @manual;
printf "  %-28s %s\n", 'manual executions', join ', ', map { "$_ $mst{$_}" } sort keys %mst;
my @probe = records('probe');
my %pst;
$pst{ $_->{status} }++ for @probe;
printf "  %-28s %s\n", 'probe answers', join ', ', map { "$_ $pst{$_}" } sort keys %pst;
my @events = records('events');
my ($held, $items, $runs_taken) = ({}, 0, 0);
if ($CLUSTER) {
	for my $n (1 .. 3) {
		my %v = map { @$_ } mysql_node($n, "SHOW GLOBAL STATUS WHERE Variable_name IN "
			. "('wsrep_local_cert_failures', 'wsrep_local_bf_aborts', 'wsrep_cluster_size', "
			. "'wsrep_local_state_comment')");
		printf "  %-28s %s\n", "node $n (since its start)", join ', ',
			map { "$_ $v{$_}" } sort keys %v;
	}
	my ($ist) = records('ist');
	printf "  %-28s %s\n", 'node 2 rejoin', ($ist->{lines} // 0) ? 'by IST' : 'no IST line in its log';
	($held) = records('b_held');
	my $a_log = SluiceTest::_slurp(env('SLUICE_CLUSTER_HOST_A_WORK_LOG'));
	$items += $_ for $a_log =~ /msg="took back abandoned work" items=(\d+)/g;
	$runs_taken = () = $a_log =~ /msg="run failed: its process is gone"[^\n]*claimed_by=\S*sluice-b:/g;
	printf "  %-28s %d item(s) and %d run(s) held; host a took back %d item(s), failed %d run(s)\n",
		"host b's work left dead", $held->{items} // 0, $held->{runs} // 0, $items, $runs_taken;
}

print "\n== checks\n";
check($drained, 'everything drained: no item queued or running, no run CREATED or RUNNING');
check(!mysql("SELECT COUNT(*) FROM work_queue WHERE status IN ('queued', 'running')"),
      'every work item finished');
# (A storage_link_load item names a table, which may be loaded many times.)
my @dup_items = mysql("SELECT kind, ref_id, COUNT(*) FROM work_queue WHERE kind = "
	. "'storage_infer' GROUP BY kind, ref_id, payload HAVING COUNT(*) > 1");
check(!@dup_items, 'each uploaded file is one queue item (never queued twice)');
my @failed = mysql("SELECT kind, LEFT(IFNULL(error, ''), 120) FROM work_queue WHERE status = 'failed'");
print "    failed item: $_->[0]: $_->[1]\n" for @failed;
check(!grep({ $_->[0] ne 'runner_sweep' } @failed), 'no work item failed for good');

my ($rag_bad, $q_bad, $up_bad, $link_bad) = (0, 0, 0, 0);
for my $r (@rag) {
	my ($st, $docs) = @{ (mysql("SELECT d.status, (SELECT COUNT(*) FROM rag_documents x WHERE "
		. "x.dataset_id = d.id) FROM rag_datasets d WHERE d.id = '$r->{dataset}'"))[0] || [] };
	# No batch stored (all answered 5xx): the dataset still waits for
	# documents, as a new one does.
	next if $docs == 0 && $r->{sure} == 0 && ($st // '') eq 'processing';
	$rag_bad++, print("    dataset $r->{dataset}: $st, $docs of $r->{sure}+$r->{maybe}\n")
		unless ($st // '') eq 'success' && $docs >= $r->{sure} && $docs <= $r->{sure} + $r->{maybe};
}
check(!$rag_bad, 'every dataset ingested (success, with every document posted)');
for my $r (@questions) {
	my $st = mysql("SELECT status FROM rag_questions WHERE id = '$r->{question}'");
	$q_bad++, print("    question $r->{question}: $st\n") unless $st eq 'success';
}
check(!$q_bad, 'no question lost: every one answered');
for my $r (@uploads) {
	my ($st, $rows) = @{ (mysql("SELECT status, IFNULL(row_count, -1) FROM datasets "
		. "WHERE id = '$r->{dataset}'"))[0] || [] };
	$up_bad++, print("    upload $r->{dataset}: $st $rows of $r->{rows}\n")
		unless ($st // '') eq 'ready' && $rows == $r->{rows};
}
check(!$up_bad, 'every upload inferred, with its exact row count');
check(!mysql("SELECT COUNT(*) FROM uploads WHERE status = 'processing'"), 'no upload left processing');
for my $r (grep { $_->{status} == 201 } @links) {
	my ($st, $rows, $wsch, $wtab) = @{ (mysql("SELECT l.sync_status, IFNULL(l.row_count, -1), "
		. "t.wh_schema, t.wh_table FROM table_links l JOIN warehouse_tables t ON t.id = l.table_id "
		. "WHERE l.table_id = '$r->{table}' AND l.dataset_id = '$r->{dataset}'"))[0] || [] };
	my $in_wh = defined $wtab ? wh_sql("SELECT COUNT(*) FROM `$wsch`.`$wtab`") : -1;
	$link_bad++, print("    link $r->{table}: $st $rows rows, $in_wh in the warehouse, "
		. "of $r->{rows}\n") unless ($st // '') eq 'done' && $rows == $r->{rows}
		&& $in_wh == $r->{rows};
}
check(!$link_bad, 'every link loaded once: its table holds the dataset\'s rows, no more');

my $WH = wh_schema($CID, 'chaos');      # the customer's database for schema chaos
my $jt = "`$WH`.$pipelines{jdbc}{table}";
my ($n, $distinct) = @{ (wh_sql("SELECT COUNT(*), COUNT(DISTINCT id) FROM $jt"))[0] };
my $src = src_sql('SELECT COUNT(*) FROM chaos_src');
printf "  %-28s %s\n", 'jdbc pipeline', "$n rows ($distinct distinct ids), source $src, last run $pipelines{jdbc}{last}";
check($n == $distinct, 'jdbc incremental: no duplicate rows in the warehouse');
check($n == $src, 'jdbc incremental: every source row loaded');
my $ft = "`$WH`.$pipelines{files}{table}";
my ($fn, $fd) = @{ (wh_sql("SELECT COUNT(*), COUNT(DISTINCT _source_file, _source_row) FROM $ft"))[0] };
# What the file_storage job must have loaded: every CSV that made it under
# chaos/ (an upload answered 5xx may still have), as its inference counted.
my $want = mysql("SELECT IFNULL(SUM(row_count), 0) FROM datasets WHERE customer_id = '$CID' "
		 . "AND file_path LIKE 'chaos/%' AND status = 'ready'");
printf "  %-28s %s\n", 'file_storage pipeline', "$fn rows ($fd distinct), uploads hold $want, last run $pipelines{files}{last}";
check($fn == $fd, 'file_storage: no duplicate rows in the warehouse');
# An upload answered 5xx may or may not be stored (its COMMIT's outcome
# was not known): its rows may be loaded too, no more.
my %unsure = map { ("chaos/$_->{file}" => $_) } records('uploads_unsure');
my $maybe = 0;
$maybe += $_->{rows} // 0 for values %unsure;
check($fn >= $want && $fn <= $want + $maybe,
      "file_storage: every uploaded row loaded ($want, and up to $maybe of uploads answered 5xx)");
my $stray = 0;
for (wh_sql("SELECT _source_file, COUNT(*) FROM $ft GROUP BY _source_file")) {
	(my $p = $_->[0]) =~ s{^.*?(chaos/)}{$1};
	$stray++ unless mysql("SELECT COUNT(*) FROM datasets WHERE customer_id = '$CID' AND "
			      . "file_path = '$p'") || $unsure{$p};
}
check(!$stray, 'file_storage: every file loaded is an upload\'s (answered 201, or 5xx)');
if ($fn != $want) {
	# Which files differ: rows loaded against what their dataset counted.
	my %ds = map { $_->[0] => "$_->[1] $_->[2]" } mysql("SELECT file_path, status, "
		. "IFNULL(row_count, -1) FROM datasets WHERE customer_id = '$CID' AND file_path LIKE 'chaos/%'");
	for (wh_sql("SELECT _source_file, COUNT(*) FROM $ft GROUP BY _source_file")) {
		my ($f, $n) = @$_;
		(my $p = $f) =~ s{^.*?(chaos/)}{$1};
		my $d = $ds{$p} // 'no dataset';
		print "    $f: $n rows loaded, dataset: $d\n" unless $d eq "ready $n";
	}
	my %un = map { $_->{file} => $_->{status} } records('uploads_unsure');
	print "    upload answered $un{$_}: $_\n" for sort keys %un;
}
check(!mysql("SELECT COUNT(*) FROM rag_datasets d WHERE status = 'processing' AND name LIKE "
	     . "'chaos-%' AND EXISTS (SELECT 1 FROM rag_documents x WHERE x.dataset_id = d.id)"),
      'no dataset with documents left processing');
check(!wh_sql("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_NAME LIKE "
	      . "'\\_sluice\\_stage\\_%'"), 'no staging table left');
check(!mysql("SELECT COUNT(*) FROM run_staging"), 'no staging table registered');

# Every run claimed once (the pipelines have no retries): no run executed twice.
my @twice = mysql("SELECT run_id, COUNT(*) FROM run_logs WHERE message LIKE 'run claimed by %' "
		  . "GROUP BY run_id HAVING COUNT(*) > 1");
print "    run $_->[0] claimed $_->[1] times\n" for @twice;
my $runs = mysql("SELECT COUNT(*) FROM pipeline_runs WHERE pipeline_id IN ("
		 . join(', ', map { "'$pipelines{$_}{id}'" } sort keys %pipelines) . ')');
printf "  %-28s %d\n", 'runs of the chaos pipelines', $runs;
check(!@twice, 'every run was claimed and executed once');
my $mt = "`$WH`.$pipelines{manual}{table}";
my ($mn, $md) = @{ (wh_sql("SELECT COUNT(*), COUNT(DISTINCT id) FROM $mt"))[0] };
check($mn == 500 && $md == 500, "full_load run by hand: its table holds the source's 500 rows once ($mn, $md distinct)");

# The API's availability: which probes failed, and in which fault.
my @bad = grep { $_->{status} != 200 } @probe;
my @outside;
for my $b (@bad) {
	my ($in) = grep { $b->{t} >= $_->{from} - 1 && $b->{t} <= $_->{to} + 1 } @events;
	push @outside, $b unless $in;
}
printf "  %-28s %d of %d (%d outside a fault window)\n", 'probes not answered 200', scalar @bad,
	scalar @probe, scalar @outside;
print "    probe at $_->{t} s: $_->{status} after $_->{ms} ms\n" for @outside[0 .. min(9, $#outside)];
my $gap = 0;
my $last = 0;
for (grep { $_->{status} == 200 } @probe) { $gap = $_->{t} - $last if $_->{t} - $last > $gap; $last = $_->{t} }
printf "  %-28s %.1f s\n", 'longest gap between 200s', $gap;
my @slow = (sort { $b->{ms} <=> $a->{ms} } @probe)[0 .. min(4, $#probe)];
printf "  %-28s %s\n", 'slowest probes', join ', ', map { "$_->{ms} ms at $_->{t} s" } @slow;
check(@probe >= $DURATION && !@outside, 'the API answered throughout, apart from the faults\' own moments');

if ($CLUSTER) {
	# What each node holds: the same rows on all three.
	my @tables = qw(pipelines pipeline_runs run_logs job_state work_queue datasets uploads
			rag_datasets rag_documents rag_snippets rag_questions warehouse_tables table_links);
	# Nothing writes while they are compared: both sluice work stopped.
	cluster('work-stop', $_) for qw(a b);
	my %sum;
	for my $try (1 .. 5) {
		for my $n (1 .. 3) {
			$sum{$n} = [ map { $_->[1] // 'none' }
				mysql_node($n, 'CHECKSUM TABLE ' . join(', ', map { "sluice.$_" } @tables)) ];
			$sum{$n} = join ' ', map { "$tables[$_]=$sum{$n}[$_]" } 0 .. $#tables;
		}
		last if $sum{1} eq $sum{2} && $sum{1} eq $sum{3};
		sleep 2;
	}
	if ($sum{1} ne $sum{2} || $sum{1} ne $sum{3}) { print "    node $_: $sum{$_}\n" for 1 .. 3 }
	check($sum{1} eq $sum{2} && $sum{1} eq $sum{3},
	      'the three nodes hold the same rows (' . scalar(@tables) . ' tables checksummed)');
	my @wh = map { [ $_, join ' ', map { $_->[1] // 'none' } mysql_node($_, "CHECKSUM TABLE $jt, $ft, $mt") ] } 1 .. 3;
	check($wh[0][1] eq $wh[1][1] && $wh[0][1] eq $wh[2][1], 'and the same warehouse rows');
}

print "\n== result: ", (@failures ? scalar(@failures) . ' check(s) FAILED' : 'all checks passed'), "\n";
exit(@failures ? 1 : 0);
