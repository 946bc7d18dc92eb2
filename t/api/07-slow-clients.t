#!/usr/bin/perl
# No kind of slow client holds the worker pool: with N = 2 x workers slow
# uploads (a body trickling in), N long polls (GET question ?wait on a
# question nobody answers) and N clients sending wrong Basic passwords in a
# loop, /health and GET /platform/pipelines keep answering, never waiting
# for the slow clients to end.
#   - uploads are buffered by nginx: no worker sees one before its body
#     is complete;
#   - long polls are held by the waiter, not by a worker;
#   - password checks (a PBKDF2 each) take at most a share of the workers,
#     and a name or address past its failure budget is refused before any;
#     both answers are 429 at once.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use POSIX ();
use Time::HiRes qw(time sleep);

use RagFixture;
use SluiceTest;
use StorageTest qw(open_upload_stream);

my ($workers) = conf_read() =~ /^\s*workers\s*=\s*(\d+)/m;
my $N = 2 * $workers;
my $WAIT = 8;
my $token = env('SLUICE_DEMO_TOKEN');
diag "$workers workers: $N slow clients of each kind";

# A question that stays processing: no worker and no sluice work will rank
# it (set-up: the row, with the parameters a question with the defaults is
# stored with, and a queue item held an hour: a question processing without
# one is taken for a worker's that died, and queued).
my $ds = new_dataset('slow clients');
my $qid = mysql('SELECT UUID()');
my $params = json_encode({ k => 20, fetch_k => 10, top_n => 3, distance_metric => 'cos',
	maximal_marginal_relevance => JSON::PP::true, hybrid => JSON::PP::true,
	lambda_mult => 0.7, score_threshold => undef, metadata_filter => undef });
mysql("INSERT INTO rag_questions (id, dataset_id, asked_by_user_id, question_text, params) "
      . "SELECT '$qid', '$ds', id, 'nobody answers this', '$params' FROM api_users WHERE name = 'demo'");
mysql("INSERT INTO work_queue (kind, ref_id, tenant, available_at) SELECT 'rag_question', "
      . "'$qid', CONCAT('user:', id), UTC_TIMESTAMP(3) + INTERVAL 1 HOUR FROM api_users "
      . "WHERE name = 'demo'");
my $log0 = serve_log_offset();

# N uploads sending their body a few bytes at a time, from a child of
# their own; it says when they are all open.
pipe(my $ready_r, my $ready_w) or die "pipe: $!";
my $trickle_until = time + $WAIT + 4;
my $trickler = fork // die "fork: $!";
if (!$trickler) {
	close $ready_r;
	my @uploads;
	for my $i (1 .. $N) {
		my $s = open_upload_stream($token, "slow-$$", 10 * 1024 * 1024,
					   'multipart/form-data; boundary=slow');
		print {$s} "--slow\r\nContent-Disposition: form-data; name=\"file\"; "
			. "filename=\"s$i.csv\"\r\n\r\na,b\n";
		push @uploads, $s;
	}
	syswrite $ready_w, "ready\n";
	while (time < $trickle_until) {
		print {$_} "1,2\n" for @uploads;
		sleep 0.5;
	}
	close $_ for @uploads;
	POSIX::_exit(0);
}
close $ready_w;
is(scalar(<$ready_r>), "ready\n", "$N slow uploads are open and trickling");

# N long polls, each one request of ?wait=$WAIT.
my $polls = start_requests(clients => $N, requests => 1,
	path => "/dataset/$ds/question/$qid?wait=$WAIT",
	opts => { basic => demo_basic(), timeout => $WAIT + 20 });
# N clients with a wrong password, one request after the other, from a
# loopback address of their own and for a name of their own, so that the
# failure throttle they run into spares the rest of the suite.
my $from = sprintf '127.%d.%d.7', 1 + $$ % 250, 1 + int(time / 7) % 250;
my $wrong = start_requests(clients => $N, duration => $WAIT + 2, pause => 0.05,
	path => "/dataset/$ds", opts => { basic => "slow-$$:not-the-password", from => $from });

# The pool under that: wait until the wrong passwords are being answered.
ok(wait_until(10, sub { grep { /status=(401|429)/ } serve_log_since($log0) }),
   'the wrong-password clients are being answered');

my (@health, @list);
my $until = time + $WAIT - 2;
while (time < $until) {
	my $t = time;
	my $h = http(GET => '/health', { timeout => 10 });
	push @health, [ time - $t, $h->{status} ];
	$t = time;
	my $l = http(GET => '/platform/pipelines', { token => $token, timeout => 10 });
	push @list, [ time - $t, $l->{status} ];
	sleep 0.25;                       # pacing the probes, not waiting for anything
}
my ($hmax) = sort { $b <=> $a } map { $_->[0] } @health;
my ($lmax) = sort { $b <=> $a } map { $_->[0] } @list;
diag sprintf('%d probes each: /health max %.0f ms, GET /platform/pipelines max %.0f ms',
	     scalar @health, $hmax * 1000, $lmax * 1000);
ok(@health >= 5, 'probed repeatedly meanwhile');
is(scalar(grep { $_->[1] != 200 } @health), 0, '/health always 200');
is(scalar(grep { $_->[1] != 200 } @list), 0, 'GET /platform/pipelines always 200');
# Held workers would show as a probe waiting for the slow clients to end:
# the first probe, made within a second or two of the long polls' start,
# would wait until they end at $WAIT s.  Half of that separates a held pool
# from a machine that is merely busy (the probes' speed is bench/'s to
# measure, not this test's).
my $held = $WAIT / 2;
cmp_ok($hmax, '<', $held, "/health never waited for the slow clients (under $held s)");
cmp_ok($lmax, '<', $held, "GET /platform/pipelines never waited for them (under $held s)");

# The slow clients got what they asked for.
my @p = $polls->finish;
is(scalar @p, $N, "$N long polls answered");
is(scalar(grep { $_->{status} == 200 && ($_->{json}{status} // '') eq 'processing' } @p), $N,
   'each with the question as it stands: processing');
is(scalar(grep { $_->{end} - $_->{start} >= $WAIT - 0.5 } @p), $N,
   "each held for its ?wait=$WAIT (by the waiter)");
my @w = $wrong->finish;
my %st;
$st{ $_->{status} }++ for @w;
is(scalar(grep { $_->{status} != 401 && $_->{status} != 429 } @w), 0,
   'wrong passwords: only 401 and 429') or diag explain \%st;
ok(($st{401} // 0) > 0, 'some were checked (401)');
ok(($st{429} // 0) > 0, 'and refused at once past the failure budget or the share (429)');
diag sprintf('wrong passwords: %d answers, %d x 401, %d x 429', scalar @w,
	     $st{401} // 0, $st{429} // 0);
ok(!(grep { m{path=/storage-explorer/storage/upload} } serve_log_since($log0)),
   'no worker saw a slow upload: nginx holds them until their body is complete');

waitpid($trickler, 0);
mysql("DELETE FROM rag_questions WHERE id = '$qid'");
mysql("DELETE FROM work_queue WHERE kind = 'rag_question' AND ref_id = '$qid'");

done_testing;
