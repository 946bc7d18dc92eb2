#!/usr/bin/perl
# Wakes: the process that stores a question's result wakes the waiter, and a
# worker that leaves a question to sluice work wakes it (util/wake.h).  A
# wake is only a hint: one that comes before the result, or one nobody
# could have sent (junk on the socket), never answers a waiting GET early
# or wrongly, and never stops the waiter.  Questions ranked by a worker and
# questions ranked by sluice work are all answered, each with its own
# result.  (How soon is for bench/retrieval_service.sh, not for a test.)

use strict;
use warnings;

use POSIX ();
use Socket qw(AF_UNIX SOCK_DGRAM pack_sockaddr_un);
use Test::More;
use Time::HiRes qw(sleep);

use SluiceTest;
use RagFixture;

my $orig = conf_read();

END {
	local ($?, $@);
	eval {
		reload_stack($orig) if conf_read() ne $orig;
		1;
	} or print STDERR "# restoring the stack failed: $@";
}

my ($listen) = $orig =~ /^[ \t]*listen[ \t]*=[ \t]*(\S+)/m;
my ($wait_listen) = $orig =~ /^[ \t]*wait_listen[ \t]*=[ \t]*(\S+)/m;
my $waiter_wake = ($wait_listen // "$listen.wait") . '.wake';
my $work_wake = "$listen.work";

ok(-S $waiter_wake, "the waiter's wake socket is there ($waiter_wake)");
ok(-S $work_wake, "sluice work's wake socket is there ($work_wake)");
is((stat $waiter_wake)[2] & 0777, 0600, 'only the service user may wake the waiter');

# Datagrams to $path: each of @msgs once.
sub send_wakes {
	my ($path, @msgs) = @_;
	socket(my $s, AF_UNIX, SOCK_DGRAM, 0) or die "socket: $!";
	send($s, $_, 0, pack_sockaddr_un($path)) for @msgs;
	close $s;
}

my @topics = (
	[ 'salmon',  'Salmon swim upstream to spawn in the rivers where they hatched.' ],
	[ 'granite', 'Granite is an igneous rock of quartz and feldspar.' ],
	[ 'apple',   'Apples grow on trees in orchards and ripen in autumn.' ],
	[ 'violin',  'A violin has four strings and is played with a bow.' ],
	[ 'glacier', 'Glaciers are rivers of ice that carve valleys in mountains.' ],
	[ 'bread',   'Bread is baked from wheat flour, water, salt and yeast.' ],
);
my %question = (
	salmon => 'Which fish swim upstream to spawn?',
	granite => 'What kind of rock is granite?',
	apple => 'Where do apples grow?',
	violin => 'How many strings does a violin have?',
	glacier => 'What carves valleys in mountains?',
	bread => 'What is bread baked from?',
);
my $id = ready_dataset([ map { { text => $_->[1], metadata => { source => "$_->[0].txt" } } }
	@topics ], name => 'wakes');

# --- a wake before the result is not the result --------------------------------------

# sluice work ranks the question, held 1.5 s: the GET waits in the waiter.
reload_stack(conf_with($orig, question_inline_max_snippets => 0,
		       rag_test_batch_delay_ms => 1500));
my $waiter = waiter_pid();
my $res = ask($id, { question => $question{salmon} });
json_response_is($res, 200, undef, 'POST question (its ranking held 1.5 s by sluice work)');
my $qid = $res->{json}{question_id};
my $pid = fork // die "fork: $!";
if (!$pid) {
	# While the GET waits and the result is not stored: wakes naming the
	# question, and junk.
	for (1 .. 5) {
		sleep 0.2;
		send_wakes($waiter_wake, "question $qid", 'question', "question $qid extra",
			   'x' x 500, "\0\0\0", "QUESTION $qid", "refresh $qid", '');
	}
	POSIX::_exit(0);
}
my $got = answer_of($id, $qid, 20);
waitpid($pid, 0);
json_response_is($got, 200, undef, 'GET ?wait=20 while woken early');
is($got->{json}{status}, 'success', 'answered with the result, not as processing');
is($got->{json}{relevant_documents}[0]{metadata}{source}, 'salmon.txt',
   'with the right snippet first');
is(waiter_pid(), $waiter, 'the waiter survived the junk');

# The dataset deleted while a GET waits for its question: the answer is a
# 404, not the question as it was.  The owner's check is made with the
# question's read (src/retrieval/questions.c), by the worker and by the
# waiter alike.
my $gone = ready_dataset([ { text => 'Salmon swim upstream to spawn.' } ], name => 'gone');
$res = ask($gone, { question => $question{salmon} });
my $gone_qid = $res->{json}{question_id};
pipe(my $gr, my $gw) or die "pipe: $!";
$pid = fork // die "fork: $!";
if (!$pid) {
	close $gr;
	my $g = answer_of($gone, $gone_qid, 3);
	print {$gw} join ' ', $g->{status}, $g->{json}{detail} // $g->{json}{status} // '-';
	close $gw;
	POSIX::_exit(0);
}
close $gw;
sleep 0.5;
is(rag(DELETE => "/dataset/$gone")->{status}, 204, 'its dataset deleted while a GET waits');
my $gone_got = do { local $/; <$gr> };
waitpid($pid, 0);
is($gone_got, '404 Question not found', 'the waiting GET answers 404 Question not found');
json_response_is(answer_of($gone, $gone_qid, 0), 404, { detail => 'Dataset not found' },
		 'and a GET after it: 404 Dataset not found');

# A wake for a question of no one: nothing happens, the next is answered.
send_wakes($waiter_wake, 'question 00000000-0000-4000-8000-000000000000');
$got = answer_of($id, ask($id, { question => $question{granite} })->{json}{question_id}, 20);
is($got->{json}{status}, 'success', 'the next question is answered too');
is($got->{json}{relevant_documents}[0]{metadata}{source}, 'granite.txt', '... its own result');

# --- many at once, ranked by the workers ------------------------------------------------

# Each client asks each question once and waits for it.
sub ask_all {
	my ($what) = @_;
	my @kids;
	for my $t (sort keys %question) {
		pipe(my $r, my $w) or die "pipe: $!";
		my $p = fork // die "fork: $!";
		if (!$p) {
			close $r;
			my $out = 'fail';
			eval {
				my $post = ask($id, { question => $question{$t} });
				my $g = answer_of($id, $post->{json}{question_id}, 20);
				$out = join ' ', $g->{status}, $g->{json}{status} // '-',
					($g->{json}{question_id} // '-') eq $post->{json}{question_id}
					? 'own' : 'other',
					$g->{json}{relevant_documents}[0]{metadata}{source} // '-';
				1;
			};
			print {$w} $out;
			close $w;
			POSIX::_exit(0);
		}
		close $w;
		push @kids, [ $t, $p, $r ];
	}
	for my $k (@kids) {
		my ($t, $p, $r) = @$k;
		my $out = do { local $/; <$r> } // '';
		waitpid($p, 0);
		is($out, "200 success own $t.txt", "$what: '$question{$t}' answered with its own result");
	}
}

reload_stack($orig);
ask_all('ranked by a worker');

# --- many at once, ranked by sluice work ---------------------------------------------------

reload_serve(conf_with($orig, question_inline_max_snippets => 0));
ask_all('ranked by sluice work');
# A child's item ends a moment after its last answer (it looks for more).
my $n;
wait_until(5, sub {
	$n = mysql("SELECT COUNT(*) FROM work_queue WHERE kind = 'rag_question' AND status = 'done' "
		. "AND claimed_by IS NOT NULL AND ref_id IN (SELECT id FROM rag_questions WHERE dataset_id = '$id')");
	$n >= keys %question;
});
cmp_ok($n, '>=', scalar keys %question, 'sluice work ranked them');

# --- settled before the GET reached the waiter ------------------------------------------

# The waiter looks at a request on arrival only when a wake named its row
# already (it settled between the worker's read and the redirect); any
# other waits for its wake or the tick without a statement of its own.
# Here the tick only keeps deadlines, sluice work is stopped (the question
# stays processing until the test stores its result) and the worker pauses
# 1.5 s between its read and the redirect.
my $r = dev('work-stop');
die "work-stop: $r->{err}" if $r->{exit};
reload_serve(conf_with($orig, question_inline_max_snippets => 0,
		       rag_test_redirect_delay_ms => 1500, wait_test_tick_blind => 'on'));
for my $case ([ 'woken', 6 ], [ 'not woken', 3 ]) {
	my ($how, $wait) = @$case;
	my $q = ask($id, { question => $question{bread} })->{json}{question_id};
	$pid = fork // die "fork: $!";
	if (!$pid) {
		sleep 0.5;                # the worker has read it processing
		mysql("UPDATE rag_questions SET status = 'success', relevant_documents = '[]', "
		      . "finished_at = UTC_TIMESTAMP(3) WHERE id = '$q'");
		send_wakes($waiter_wake, "question $q") if $how eq 'woken';
		POSIX::_exit(0);
	}
	my $t0 = Time::HiRes::time();
	$got = answer_of($id, $q, $wait);
	my $took = Time::HiRes::time() - $t0;
	waitpid($pid, 0);
	note "$how: answered in $took s";
	json_response_is($got, 200, undef, "GET ?wait=$wait of a question settled and $how meanwhile");
	is($got->{json}{status}, 'success', "$how: answered with what was stored");
	# Arrival at 1.5 s; the deadline $wait s after it.
	if ($how eq 'woken') {
		cmp_ok($took, '<', 4, 'woken: answered on arrival, not at the deadline')
			or diag "took $took s";
	} else {
		cmp_ok($took, '>=', $wait - 0.5, 'not woken: left to the tick (here: the deadline)')
			or diag "took $took s";
	}
}
$r = dev('work-start');
die "work-start: $r->{err}" if $r->{exit};

reload_serve($orig);
done_testing();
