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
# and every 10 to 30 s kills (-9) a random serve worker, a random child of
# sluice work, or sluice work itself (which is then started again, as
# systemd would); MariaDB is restarted twice.
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
			record('uploads_unsure', file => $name, status => $res->{status});
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

# --- set-up ---------------------------------------------------------------------------------

say_ "chaos soak: $DURATION s of load, then up to $DRAIN s to drain";
src_sql('DROP TABLE IF EXISTS chaos_src; CREATE TABLE chaos_src (id INT AUTO_INCREMENT '
	. 'PRIMARY KEY, v VARCHAR(32), at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3))');
my $conn = make_connection($TOKEN);
my %pipelines;
for my $p (
	[ jdbc => { connector => 'jdbc', plugin => 'mariadb', connection_id => $conn,
		    table_name => 'chaos_src', load_type => 'incremental',
		    incremental_column_name => 'id', incremental_column_type => 'int' }, 'chaos_jdbc' ],
	[ files => { connector => 'file_storage', plugin => 'local', prefix => 'chaos/' },
	  'chaos_files' ],
) {
	my ($name, $in, $table) = @$p;
	my $res = http(POST => '/platform/pipeline', { token => $TOKEN, json => {
		name => "chaos $name", cron => '* * * * *', jobs => [ { input => $in,
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
	     slow => sub { slow_loop($qds, $qid) }, killer => \&killer);
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

dev('db-start');
dev('work-start') unless work_pid() && proc_alive(work_pid());
mysql("DELETE FROM rag_questions WHERE id = '$qid'");
my $t_drain = time;
my $drained = wait_until($DRAIN, sub {
	mysql("SELECT (SELECT COUNT(*) FROM work_queue WHERE status IN ('queued', 'running')) + "
	      . "(SELECT COUNT(*) FROM pipeline_runs WHERE status IN ('CREATED', 'RUNNING'))") == 0;
}, 1);
say_ sprintf('drained in %.0f s', time - $t_drain);
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
printf "  %-28s %d\n", 'uploads answered otherwise', scalar(records('uploads_unsure'));
printf "  %-28s %d\n", 'links', scalar @links;
printf "  %-28s %s\n", 'work items by status', join ', ', map { "$_ $q{$_}" } sort keys %q;
printf "  %-28s %d\n", 'transaction retries logged',
	scalar(() = SluiceTest::_slurp(env('SLUICE_WORK_LOG')) =~ /msg="transaction retried"/g);

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
check($fn == $want, 'file_storage: every uploaded row loaded');
check(!mysql("SELECT COUNT(*) FROM rag_datasets d WHERE status = 'processing' AND name LIKE "
	     . "'chaos-%' AND EXISTS (SELECT 1 FROM rag_documents x WHERE x.dataset_id = d.id)"),
      'no dataset with documents left processing');
check(!wh_sql("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_NAME LIKE "
	      . "'\\_sluice\\_stage\\_%'"), 'no staging table left');
check(!mysql("SELECT COUNT(*) FROM run_staging"), 'no staging table registered');

print "\n== result: ", (@failures ? scalar(@failures) . ' check(s) FAILED' : 'all checks passed'), "\n";
exit(@failures ? 1 : 0);
