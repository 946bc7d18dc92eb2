#!/usr/bin/perl
# Nothing is lost when a process dies: a question its worker answers is
# stored answered and never queued; a worker killed (-9) while it ranks a
# question inside the POST stored nothing and the POST fails; a question
# left processing without a queue row (by an earlier sluice) is queued and
# answered by sluice work; a question its worker cannot rank is queued by
# the worker; and an ingestion whose sluice work is killed mid-way is taken
# back by the next sluice work and finishes without duplicates.  The
# test-only delay keys (honoured with testing_routes = on) hold the work
# long enough to kill the process doing it.

use strict;
use warnings;

use JSON::PP ();
use POSIX ();
use Test::More;
use Time::HiRes qw(time);

use SluiceTest;
use RagFixture;

my $orig = conf_read();
my $db_down = 0;

sub restart_work {
	for my $cmd (qw(work-stop work-start)) {
		my $r = dev($cmd);
		die "$cmd: $r->{err}" if $r->{exit};
	}
}

END {
	local ($?, $@);
	eval {
		if ($db_down) {
			dev('db-start');
			wait_until(60, sub { http(GET => '/health')->{status} == 200 });
		}
		if (conf_read() ne $orig) {
			reload_serve($orig);
			restart_work();
		}
		dev('work-start');
		1;
	} or print STDERR "# restoring the stack failed: $@";
}

my $id = ready_dataset([
	{ text => 'Apples grow on trees in orchards.', metadata => { source => 'apples.txt' } },
	{ text => 'Salmon swim upstream to spawn.', metadata => { source => 'salmon.txt' } },
	{ text => 'Granite is an igneous rock.', metadata => { source => 'granite.txt' } },
], name => 'recovery');

# --- a question its worker answers ----------------------------------------------------

# Stored once, answered: no queue row, not even once sluice work has looked
# for questions left unanswered (every 5 s).
my $res = ask($id, { question => 'igneous rock' });
json_response_is($res, 200, undef, 'POST question');
my $qid2 = $res->{json}{question_id};
is(mysql("SELECT status FROM rag_questions WHERE id = '$qid2'"), 'success',
   '... stored answered by the worker, before its answer');
my $got = answer_of($id, $qid2, 0);
is($got->{json}{status}, 'success', '... so a GET that does not wait finds it done');
is($got->{json}{relevant_documents}[0]{metadata}{source}, 'granite.txt', '... rightly');
my ($created, $finished, $elapsed) = @{ $got->{json} }{qw(created_at finished_at elapsed_ms)};
ok(defined $finished && defined $elapsed && $created le $finished && $elapsed >= 0
   && $elapsed < 10_000, '... with its time from POST to answer')
	or diag explain [ $created, $finished, $elapsed ];
sleep 6;
is(mysql("SELECT COUNT(*) FROM work_queue WHERE ref_id = '$qid2'"), 0,
   '... and never queued');

# --- faults while a worker ranks a question -----------------------------------------

# A question asked of $ds while its worker's ranking waits $hold_ms inside
# the POST; $during->($worker) runs meanwhile.  The POST's "status detail".
my $master = master_pid();
sub post_while_ranking {
	my ($ds, $hold_ms, $during) = @_;
	reload_serve(conf_with($orig, rag_test_question_delay_ms => $hold_ms));
	pipe(my $pr, my $pw) or die "pipe: $!";
	my $kid = fork // die "fork: $!";
	if (!$kid) {
		close $pr;
		my $r = ask($ds, { question => 'Which fish swim upstream?' });
		print {$pw} join ' ', $r->{status}, $r->{json}{detail} // '-';
		close $pw;
		POSIX::_exit(0);
	}
	close $pw;
	my $busy;
	wait_until(8, sub { $busy = busy_worker($master) });
	ok($busy, 'a worker is ranking the question inside its POST');
	$during->($busy) if $busy;
	my $posted = do { local $/; <$pr> };
	waitpid($kid, 0);
	return $posted // '';
}

# Killed: the worker has stored nothing, the client's POST fails and it
# asks again.
my @workers = worker_pids($master);
my $before = mysql("SELECT COUNT(*) FROM rag_questions WHERE dataset_id = '$id'");
my $killed;
my $posted = post_while_ranking($id, 4000, sub {
	($killed) = @_;
	ok(kill('KILL', $killed), "kill -9 worker $killed");
});
like($posted, qr/^502 /, 'the POST fails (nginx: Bad Gateway)');
is(mysql("SELECT COUNT(*) FROM rag_questions WHERE dataset_id = '$id'"), $before,
   '... and no question was stored');
ok(wait_workers($master, scalar @workers, 15, [$killed // 0]), 'the master replaced the worker');
reload_serve($orig);
$got = answer($id, { question => 'Which fish swim upstream?' });
is($got->{status}, 'success', 'asked again: answered');
is($got->{relevant_documents}[0]{metadata}{source}, 'salmon.txt', '... rightly');

# MariaDB stopped: the question cannot be stored once ranked, the POST
# answers 503 and nothing is stored; once MariaDB is back it is answered.
$before = mysql("SELECT COUNT(*) FROM rag_questions WHERE dataset_id = '$id'");
$posted = post_while_ranking($id, 3000, sub {
	$db_down = 1;
	is(dev('db-stop')->{exit}, 0, 'MariaDB stopped meanwhile');
});
is($posted, '503 Database unavailable', 'the POST answers 503: the question is not stored');
is(dev('db-start')->{exit}, 0, 'MariaDB started again');
ok(wait_until(60, sub { http(GET => '/health')->{status} == 200 }), '... and healthy');
$db_down = 0;
is(mysql("SELECT COUNT(*) FROM rag_questions WHERE dataset_id = '$id'"), $before,
   '... and no question was stored');
reload_serve($orig);
$got = answer($id, { question => 'Which fish swim upstream?' });
is($got->{status}, 'success', 'asked again: answered');

# Its dataset deleted: the question has nowhere to be stored, 404 Dataset
# not found, as for a question asked a moment later.
my $brief = ready_dataset([ { text => 'Salmon swim upstream to spawn.' } ],
			  name => 'deleted while ranked');
$posted = post_while_ranking($brief, 3000, sub {
	is(rag(DELETE => "/dataset/$brief")->{status}, 204, 'its dataset deleted meanwhile');
});
is($posted, '404 Dataset not found', 'the POST answers 404 Dataset not found');
is(mysql("SELECT COUNT(*) FROM rag_questions WHERE dataset_id = '$brief'"), 0,
   '... and no question was stored');
reload_serve($orig);

# --- a question an earlier sluice stored before its worker ranked it ---------------

# Such a worker killed left the question processing with no queue row;
# sluice work finds it and answers it.
my ($user, $params) = @{ (mysql("SELECT asked_by_user_id, params FROM rag_questions "
	. "WHERE id = '$qid2'"))[0] };
my $orphan = mysql("SELECT UUID()");
mysql("INSERT INTO rag_questions (id, dataset_id, asked_by_user_id, question_text, params, "
	. "created_at) VALUES ('$orphan', '$id', $user, 'Which fish swim upstream?', "
	. "'$params', UTC_TIMESTAMP(3) - INTERVAL 2 SECOND)");
my $t0 = time;
my $woff = work_log_offset();
$got = answer_of($id, $orphan, 25);
is($got->{json}{status}, 'success', 'a question left processing: answered by sluice work');
ok((grep { /msg="question left unanswered by its worker, queued"/ && /question=$orphan/ }
    work_log_since($woff)), '... which found it still processing and queued it');
is($got->{json}{relevant_documents}[0]{metadata}{source},
   'salmon.txt', '... with the right snippet first');
cmp_ok(time - $t0, '<', 20, '... within the fallback delay and a poll');
# The child may look for more of the dataset's questions for a moment
# after storing this answer (src/retrieval/answer.c) before its item ends.
my ($qstatus, $claimed);
wait_until(5, sub {
	($qstatus, $claimed) = @{ (mysql("SELECT status, claimed_by IS NOT NULL FROM work_queue "
		. "WHERE kind = 'rag_question' AND ref_id = '$orphan'"))[0] || [] };
	($qstatus // '') eq 'done';
});
is($qstatus, 'done', '... its queue row is done');
is($claimed, 1, '... claimed by sluice work');

# A question its worker cannot rank (the index file is gone, and a worker
# does not rebuild one) is queued by the worker and answered by sluice work.
my $lost = ready_dataset([
	{ text => 'Owls hunt at night.', metadata => { source => 'owls.txt' } },
	{ text => 'Bees make honey.', metadata => { source => 'bees.txt' } },
], name => 'recovery, no index file');
unlink index_file($lost) or die "unlink: $!";
my $soff = serve_log_offset();
$res = ask($lost, { question => 'Which birds hunt at night?' });
json_response_is($res, 200, undef, 'POST question on a dataset without its index file');
my $qid3 = $res->{json}{question_id};
$got = answer_of($lost, $qid3, 20);
is($got->{json}{status}, 'success', '... answered');
is($got->{json}{relevant_documents}[0]{metadata}{source}, 'owls.txt', '... rightly');
ok((grep { /msg="question left to sluice work"/ && /question=$qid3/ } serve_log_since($soff)),
   '... by sluice work, after the worker failed');
ok(wait_until(5, sub { mysql("SELECT status, claimed_by IS NOT NULL FROM work_queue "
	. "WHERE kind = 'rag_question' AND ref_id = '$qid3'") eq "done\t1" }),
   '... from the queue row the worker made')
	or diag explain mysql("SELECT status, claimed_by FROM work_queue WHERE ref_id = '$qid3'");
ok(-f index_file($lost), '... which rebuilt the index file');

# An index file of the version before (an upgrade's): refused by the
# worker, rebuilt in the current version by sluice work.
my $old = ready_dataset([
	{ text => 'Moles dig tunnels.', metadata => { source => 'moles.txt' } },
	{ text => 'Gulls follow ships.', metadata => { source => 'gulls.txt' } },
], name => 'recovery, index file of an older version');
my $version_of = sub {
	open my $fh, '<:raw', index_file($old) or die "open: $!";
	sysseek($fh, 8, 0) or die "seek: $!";
	sysread($fh, my $v, 4) == 4 or die "read: $!";
	return unpack('V', $v);
};
my $current = $version_of->();
cmp_ok($current, '>=', 5, "the index file's version ($current)");
{
	open my $fh, '+<:raw', index_file($old) or die "open: $!";
	sysseek($fh, 8, 0) or die "seek: $!";
	syswrite($fh, pack('V', $current - 1)) == 4 or die "write: $!";
}
$woff = work_log_offset();
$res = ask($old, { question => 'Which animals dig tunnels?' });
json_response_is($res, 200, undef, 'POST question on a dataset whose index file is older');
$got = answer_of($old, $res->{json}{question_id}, 20);
is($got->{json}{status}, 'success', '... answered');
is($got->{json}{relevant_documents}[0]{metadata}{source}, 'moles.txt', '... rightly');
ok((grep { /msg="rebuilding index file"/ && /dataset=$old/ && /unsupported index version/ }
    work_log_since($woff)), '... by sluice work, which rebuilt the index file')
	or diag explain [work_log_since($woff)];
is($version_of->(), $current, '... in the current version');

# --- sluice work killed during ingestion ---------------------------------------------

conf_write(conf_with($orig, rag_test_ingest_delay_ms => 1500));
restart_work();
my $ds = new_dataset('killed ingestion');
my @docs = map { { text => "Document $_ about topic $_. " . ('More words here. ' x 80),
		   metadata => { n => $_ } } } 1 .. 4;
is(add_documents($ds, \@docs)->{status}, 202, 'four documents');
ok(wait_until(15, sub { mysql("SELECT COUNT(*) FROM rag_documents WHERE dataset_id = '$ds' "
	. "AND status = 'success'") >= 1 }), 'ingestion under way');
my $work = do { open my $fh, '<', env('SLUICE_WORK_PID') or die $!; my $p = <$fh>; $p =~ s/\s+//g; $p };
is(mysql("SELECT status FROM work_queue WHERE kind = 'rag_ingest' AND ref_id = '$ds'"), 'running',
   'its queue row is running');
is(mysql("SELECT COUNT(*) FROM work_leases WHERE name = 'rag_ingest:$ds' "
	 . "AND process_id LIKE '%:$work'"), 1, 'the killed process holds the dataset\'s lease');
ok(kill('KILL', $work), "kill -9 sluice work $work");
wait_until(5, sub { !proc_alive($work) });
my $mid = rag(GET => "/dataset/$ds")->{json};
is($mid->{status}, 'processing', 'the dataset is left processing');
cmp_ok($mid->{progress}{documents_done}, '<', 4, 'part done');

conf_write($orig);
my $r = dev('work-start');
is($r->{exit}, 0, 'a new sluice work') or diag $r->{err};
my $done = wait_dataset($ds, 40);
is($done->{status}, 'success', 'the new sluice work finished the ingestion');
is($done->{document_count}, 4, 'four documents');
is($done->{progress}{documents_done}, 4, 'all done');
is($done->{snippet_count}, mysql("SELECT COUNT(*) FROM rag_snippets WHERE dataset_id = '$ds'"),
   'snippet_count matches the rows');
is(mysql("SELECT COUNT(*) FROM (SELECT document_id, position FROM rag_snippets WHERE dataset_id = '$ds' "
	 . "GROUP BY document_id, position HAVING COUNT(*) > 1) d"), 0, 'no duplicate snippets');
my $per_doc = mysql("SELECT COUNT(DISTINCT cnt) FROM (SELECT COUNT(*) cnt FROM rag_snippets "
		    . "WHERE dataset_id = '$ds' GROUP BY document_id) c");
is($per_doc, 1, 'the same number of snippets for each (equal) document');
is(mysql("SELECT attempts FROM work_queue WHERE kind = 'rag_ingest' AND ref_id = '$ds'"), 2,
   'the queue row ran a second time');
is(mysql("SELECT COUNT(*) FROM work_leases WHERE name = 'rag_ingest:$ds'"), 0,
   'the dead holder\'s lease did not outlive it: the new ingestion took and released it');
my $a = answer($ds, { question => 'Document 3 about topic 3', top_n => 1,
		      metadata_filter => { n => 3 } });
is($a->{relevant_documents}[0]{metadata}{n}, 3, 'and it answers questions');

# --- a configuration that cannot embed is refused when the dataset is made ---------

reload_serve(conf_with($orig, embedding_provider => 'openai', openai_base_url => undef));
json_response_is(rag(POST => '/dataset', { name => 'no endpoint' }), 500,
		 { detail => 'Server configuration error: embedding_provider = openai needs openai_base_url' },
		 'openai without openai_base_url: 500 naming the key');
reload_serve($orig);

is(rag(DELETE => "/dataset/$ds")->{status}, 204, 'clean up');
is(rag(DELETE => "/dataset/$id")->{status}, 204, 'clean up');

done_testing();
