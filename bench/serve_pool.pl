#!/usr/bin/perl
# bench/serve_pool.pl - the measurements of bench/serve_pool.sh (which says
# what they are); run against the instance its SLUICE_* variables name.
use strict;
use warnings;

use POSIX ();
use Time::HiRes qw(time sleep);

use RagFixture;
use SluiceTest;
use StorageTest qw(upload open_upload_stream);

my $TOKEN = env('SLUICE_DEMO_TOKEN');
my ($WORKERS) = conf_read() =~ /^\s*workers\s*=\s*(\d+)/m;

sub median { my @s = sort { $a <=> $b } @_; return $s[int(@s / 2)] }
sub pct { my ($p, @v) = @_; my @s = sort { $a <=> $b } @v; return $s[int($p * $#s + 0.5)] }

sub kb {
	my ($pid, $file, $field) = @_;
	open my $fh, '<', "/proc/$pid/$file" or return 0;
	while (<$fh>) { return $1 if /^\Q$field\E:\s+(\d+) kB/ }
	return 0;
}

# INLINE_MAX: question_inline_max_snippets for this run (a reload).
if (defined $ENV{INLINE_MAX}) {
	my @old = worker_pids();
	conf_write(conf_with(conf_read(), question_inline_max_snippets => $ENV{INLINE_MAX}));
	kill 'HUP', master_pid();
	wait_workers(master_pid(), scalar @old, 30, \@old) or die "no new workers after HUP\n";
}

# --- (a) RSS per process after mixed requests --------------------------------------------
my $ds = ready_dataset([ map { { text => "Pool document $_ about tides and harbours.",
				 metadata => { source => "p$_.txt" } } } 1 .. 50 ]);
my @kinds = (
	sub { http(GET => '/health') },
	sub { http(GET => '/platform/pipelines', { token => $TOKEN }) },
	sub { rag(GET => "/dataset/$ds") },
	sub { my $q = ask($ds, { question => 'when is high tide?' });
	      rag(GET => "/dataset/$ds/question/$q->{json}{question_id}?wait=5") },
	sub { upload($TOKEN, 'pool', [ 'p' . int(rand 1e9) . '.csv', "a,b\n1,2\n" ]) },
);
for my $i (1 .. $ENV{REQUESTS}) {
	$kinds[$i % @kinds]->();
}
my $master = master_pid();
if ($ENV{REQUESTS}) {
	print "== (a) RSS after $ENV{REQUESTS} mixed requests ($WORKERS workers)\n";
	printf "%-10s %8s %8s %12s\n", 'process', 'pid', 'VmRSS kB', 'private kB';
}
for my $p ($ENV{REQUESTS} ? ([ master => $master ], (map { [ worker => $_ ] }
	   worker_pids($master)), [ waiter => waiter_pid($master) ]) : ()) {
	my ($what, $pid) = @$p;
	next unless $pid;
	my $private = kb($pid, 'smaps_rollup', 'Private_Clean') + kb($pid, 'smaps_rollup', 'Private_Dirty');
	printf "%-10s %8d %8d %12d\n", $what, $pid, kb($pid, 'status', 'VmRSS'), $private;
}

# --- (b) an upload: total time against the worker's share ----------------------------------
if ($ENV{UPLOAD_MIB}) {
	my $mib = $ENV{UPLOAD_MIB};
	my $chunk = ("0123456789," x 5957 . "\n") x 16;           # ~1 MiB of CSV
	my $bnd = 'pool-boundary';
	my $head = "--$bnd\r\nContent-Disposition: form-data; name=\"file\"; filename=\"big.csv\"\r\n\r\n";
	my $tail = "\r\n--$bnd--\r\n";
	my $len = length($head) + $mib * length($chunk) + length($tail);
	my $off = serve_log_offset();
	my $t0 = time;
	my $s = open_upload_stream($TOKEN, 'pool-big', $len, "multipart/form-data; boundary=$bnd");
	print {$s} $head;
	print {$s} $chunk for 1 .. $mib;
	print {$s} $tail;
	my $t_sent = time;
	my $answer = '';
	while (sysread($s, my $b, 65536)) { $answer .= $b }
	my $t_done = time;
	my ($ms) = map { /path=\/storage-explorer\/storage\/upload status=201 ms=([\d.]+)/ ? $1 : () }
		serve_log_since($off);
	print "== (b) upload of $mib MiB, sent as fast as the client can\n";
	printf "total %.2f s (%.0f MiB/s), body sent after %.2f s; answer %.2f s after the last byte\n",
	       $t_done - $t0, $mib / ($t_done - $t0), $t_sent - $t0, $t_done - $t_sent;
	printf "the worker held it %.2f s (serve log ms=%s): %.0f MiB/s from nginx's buffer to the storage area\n",
	       ($ms // 0) / 1000, $ms // '?', $ms ? $mib / ($ms / 1000) : 0;
	print $answer =~ m{^HTTP/1\.1 201 } ? "status 201\n" : "status NOT 201: " . substr($answer, 0, 200) . "\n";
}

# --- (c) ranking in a worker, by index size ---------------------------------------------------
print "== (c) a question ranked by the worker that answered its POST (median of 9)\n";
printf "%10s %12s %14s\n", 'snippets', 'elapsed ms', 'ranked by';
for my $n (split ' ', $ENV{SIZES}) {
	my $id = new_dataset("rank-$n");
	for (my $i = 0; $i < $n; $i += 1000) {
		my $m = $n - $i < 1000 ? $n - $i : 1000;
		add_documents($id, [ map { { text => "Snippet $_ of $n: the ferry leaves the "
			. "harbour at tide " . ($_ % 97) . " and returns by " . ($_ % 13) . ".",
			metadata => { n => $_ } } } $i + 1 .. $i + $m ]);
	}
	my $d = wait_dataset($id, 900);
	my (@ms, %by);
	for my $k (1 .. 9) {
		my $q = ask($id, { question => "when does the ferry leave at tide $k?" });
		my $g = rag(GET => "/dataset/$id/question/$q->{json}{question_id}?wait=30")->{json};
		push @ms, $g->{elapsed_ms} // -1;
		my $claimed = mysql("SELECT claimed_by IS NOT NULL FROM work_queue WHERE kind = "
			. "'rag_question' AND ref_id = '$q->{json}{question_id}'");
		$by{ $claimed ? 'sluice work' : 'the worker' }++;
	}
	printf "%10d %12.1f %14s\n", $d->{snippet_count}, median(@ms),
	       join(', ', map { "$_ $by{$_}" } sort keys %by);
}
for my $k (qw(question_inline_max_snippets question_inline_budget_ms work_poll_ms)) {
	my ($v) = conf_read() =~ /^\s*\Q$k\E\s*=\s*(\d+)/m;
	print "$k = ", $v // 'default', "\n";
}

# --- (d) /health under slow clients ------------------------------------------------------------
sub health_run {
	my @t;
	for (1 .. 200) {
		my $t0 = time;
		http(GET => '/health');
		push @t, (time - $t0) * 1000;
	}
	return sprintf('p50 %.1f ms, p99 %.1f ms, max %.1f ms', pct(0.5, @t), pct(0.99, @t), pct(1, @t));
}
exit 0 if defined $ENV{HEALTH} && !$ENV{HEALTH};
print "== (d) GET /health, 200 requests, a new TLS connection each\n";
print 'alone: ', health_run(), "\n";
{
	my $N = $ENV{MIX_CLIENTS} || 2 * $WORKERS;
	my $qid = mysql('SELECT UUID()');
	# the parameters a question with the defaults is stored with, which
	# the answer's schema requires
	my $params = json_encode({ k => 20, fetch_k => 10, top_n => 3, distance_metric => 'cos',
		maximal_marginal_relevance => JSON::PP::true, hybrid => JSON::PP::true,
		lambda_mult => 0.7, score_threshold => undef, metadata_filter => undef });
	mysql("INSERT INTO rag_questions (id, dataset_id, asked_by_user_id, question_text, params) "
	      . "SELECT '$qid', '$ds', id, 'nobody answers', '$params' FROM api_users WHERE name = 'demo'");
	my $stop = time + 3600;
	my $kid = fork // die;
	if (!$kid) {
		my @s = map { my $s = open_upload_stream($TOKEN, 'slow', 1 << 20,
				'multipart/form-data; boundary=q');
			print {$s} "--q\r\nContent-Disposition: form-data; name=\"file\"; filename=\"s.csv\"\r\n\r\n";
			$s } 1 .. $N;
		while (1) { print {$_} "1,2\n" for @s; sleep 0.5 }
	}
	my $polls = start_requests(clients => $N, path => "/dataset/$ds/question/$qid?wait=30",
				   opts => { basic => demo_basic(), timeout => 60 });
	my $wrong = start_requests(clients => $N, pause => 0.05, path => "/dataset/$ds",
				   opts => { basic => "nobody-$$:wrong" });
	sleep 2;                     # let them all get going before measuring
	print "with $N slow uploads, $N long polls, $N wrong-password clients: ", health_run(), "\n";
	$polls->stop;
	$wrong->stop;
	kill 'KILL', $kid;
	waitpid($kid, 0);
	mysql("DELETE FROM rag_questions WHERE id = '$qid'");
}
