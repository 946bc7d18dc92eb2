#!/usr/bin/env bash
# bench/retrieval_service.sh - the retrieval service under load (the service
# half of bench/retrieval_speed.sh, which runs it; it also runs alone).
#
# Starts the `bench` instance (port 28443, or SLUICE_PORT) with WORKERS workers, then
#   (1) ingestion throughput: uploads FILES text files (real text from
#       /usr/share/common-licenses and /usr/share/doc, about SNIPPETS
#       snippets in all) to a new dataset and times POST -> status success;
#       snippets per second = snippet_count / that time;
#   (2) POST-to-success latency: CLIENTS concurrent clients (16), each
#       QUESTIONS times: POST /dataset/{id}/question, then GET ?wait=5 until
#       status is success; the time from sending POST to the success answer,
#       p50/p90/p99 over all questions (each client keeps its connection,
#       as an application would), and the questions that failed by what
#       was answered instead (e.g. "POST 429").  Where the time goes: the questions'
#       own elapsed_ms (created_at to finished_at, the ranking) and the
#       latency minus that (the requests and the wait for the result).
#       SHARED=off has each worker rank its question in a pass of its
#       own instead of sharing passes with the other workers'
#       (question_shared_passes); the passes shared during the run, the
#       questions a pass ranked on average, and the passes led by a
#       worker whose wait ended on its tick rather than a wake are printed
#       (from the test build's GET /_test/passes).
#       INLINE_MAX=0 has every question ranked by `sluice work` instead of
#       the worker that took the POST (question_inline_max_snippets);
#       QPARAMS (JSON) adds fields to every question, e.g. the exact vector
#       path: QPARAMS='{"hybrid":false,"maximal_marginal_relevance":false}'.
#       CLIENT=wrk has wrk's threads ask instead of 16 Perl processes
#       (bench/lib/questions.lua, the same requests one connection a
#       client): the clients then take a fraction of the CPU they take
#       in Perl, CPU the service gets on a two-CPU machine, as it would
#       with its clients elsewhere; its clock runs from the first POST.
#       The clock starts once every client is connected; MariaDB's
#       statements, commits and rows per question are printed too (its
#       global counters, so sluice work's idle polling is in them), and
#       the CPU time per question of each program on the machine (the
#       service's, the clients', anything else running): on two CPUs
#       questions/s follows it, and it shows in which program a change
#       saved time.
#   (3) the ingestion curve, when DOCS is set (e.g. DOCS="1000 10000
#       100000"): for each N, a new dataset gets N one-snippet documents
#       (300-600 characters of the same text, each with a metadata.source
#       as an upload has, so its title is indexed too) posted as JSON in
#       batches of BATCH (1000) back to back, timed from the first POST to status
#       success; documents/s and snippets/s per N show whether the cost per
#       document stays flat as the dataset grows.  A size that is not done
#       within CAP seconds (600) is reported with the rate reached so far
#       (progress.documents_done) and the dataset is deleted; one that
#       settled is read 20 times over (the median GET, which must not grow
#       with N) before it is deleted.  The polls' own times while the
#       dataset is processing are printed too.
#       INGEST_ONLY=1 runs (1) and (3) only.
# The instance is stopped at the end unless KEEP=1.  The dataset of (1) is
# the one (2) asks; questions are lines of the same text.
#
# Environment: SLUICE_PORT (28443), WORKERS (8 per CPU), KEEPALIVE (4: nginx's idle
# FastCGI connections per process, the shipped site's), CLIENT (perl, or wrk),
# CLIENTS (16), QUESTIONS (50 per client), SNIPPETS (20000), FILES (20), DOCS
# (unset), BATCH (1000), CAP (600), INGEST_ONLY (0), KEEP (0), INLINE_MAX
# (unset: the config's), SHARED (unset: the config's; on or off:
# question_shared_passes), COLD (0; 1: between ingestion and the questions
# the page cache is dropped and serve restarted, so the workers read the
# index back from disk; needs root), QPARAMS (unset), EMBED (unset; stub: the local embeddings stub), POLL
# (0.05: the most seconds between the GETs of a dataset's progress while
# it is ingested, and at most a twentieth of the time so far, at least
# 2 ms; each GET counts the dataset's documents and snippets), STMTS (0;
# 1: MariaDB's general log during the questions of (2), then its
# statements per question by kind; the log slows the run), BACKLOG (0; N:
# the dataset holds N answered questions before the questions of (2), so
# that rag_questions is larger than the buffer pool, as it grows to be).
#
# The ingestion figures of docs/operations.md:
#   SLUICE_PORT=41443 INGEST_ONLY=1 DOCS="1000 10000 100000" \
#       bench/retrieval_service.sh | tee bench/results/retrieval-ingest-<date>.txt
set -euo pipefail

ROOT=$(dirname "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")")
export SLUICE_INSTANCE=bench
export SLUICE_PORT=${SLUICE_PORT:-28443}
WORKERS=${WORKERS:-$(( n = $(nproc) * 8, n < 8 ? 8 : n > 64 ? 64 : n ))}   # the default: 8 a CPU, 8 to 64
KEEPALIVE=${KEEPALIVE:-4}
[[ $KEEPALIVE =~ ^[1-9][0-9]*$ ]] || { echo "KEEPALIVE must be a positive number" >&2; exit 2; }
CLIENTS=${CLIENTS:-16}
[[ ${CLIENT:-perl} == @(perl|wrk) ]] || { echo "CLIENT must be perl or wrk" >&2; exit 2; }
QUESTIONS=${QUESTIONS:-50}
SNIPPETS=${SNIPPETS:-20000}
FILES=${FILES:-20}
DEV=$ROOT/scripts/dev
VAR=$ROOT/var/bench
TMP=$(mktemp -d)

STUB_PID=
cleanup() {
	[[ -z $STUB_PID ]] || kill "$STUB_PID" 2>/dev/null || true
	rm -rf "$TMP"
	[[ ${KEEP:-0} == 1 ]] || "$DEV" down bench >/dev/null 2>&1 || true
}
trap cleanup EXIT

"$DEV" up bench >"$TMP/up.log" 2>&1 || { cat "$TMP/up.log"; exit 1; }
# More workers than the dev default: waiting GETs hold one each.
conf=$VAR/sluice.conf
setconf() {
	grep -qx "$1 = $2" "$conf" && return 1
	sed -i -e "/^$1 *=/d" "$conf"
	echo "$1 = $2" >>"$conf"
}
changed=0
setconf workers "$WORKERS" && changed=1
if [[ -n ${INLINE_MAX:-} ]]; then
	setconf question_inline_max_snippets "$INLINE_MAX" && changed=1
elif grep -q '^question_inline_max_snippets' "$conf"; then
	sed -i -e '/^question_inline_max_snippets *=/d' "$conf"
	changed=1
fi
if [[ -n ${SHARED:-} ]]; then
	setconf question_shared_passes "$SHARED" && changed=1
elif grep -q '^question_shared_passes' "$conf"; then
	sed -i -e '/^question_shared_passes *=/d' "$conf"
	changed=1
fi
# EMBED=stub: datasets embedded by a learned-embedder stand-in, the tests'
# local OpenAI-compatible server (t/lib/EmbedStub.pm: hashed words, 384
# dimensions), so every question goes through sluice work and reads every
# vector (hybrid with vec_search).
stub_keys=(embedding_provider openai_base_url openai_model openai_batch_size)
work_changed=0
if [[ ${EMBED:-} == stub ]]; then
	perl -I"$ROOT/t/lib" -MEmbedStub -e '$SIG{TERM} = sub { exit 0 }; $s = EmbedStub->start(dim => 384);
		open my $f, ">", $ARGV[0] or die; print {$f} $s->url; close $f; sleep' \
		"$TMP/stub.url" &
	STUB_PID=$!
	for _ in $(seq 50); do [[ -s $TMP/stub.url ]] && break; sleep 0.1; done
	setconf embedding_provider openai && changed=1
	setconf openai_base_url "$(cat "$TMP/stub.url")" && changed=1
	setconf openai_model stub-embed && changed=1
	setconf openai_batch_size 256 && changed=1
	work_changed=1
elif grep -q '^embedding_provider' "$conf"; then
	sed -i -e "$(printf '/^%s *=/d;' "${stub_keys[@]}")" "$conf"
	changed=1
	work_changed=1
fi
if [[ $changed == 1 ]]; then
	"$DEV" serve-stop >/dev/null 2>&1
	"$DEV" serve-start >/dev/null 2>&1
fi
if [[ $work_changed == 1 ]]; then
	"$DEV" work-stop >/dev/null 2>&1
	"$DEV" work-start >/dev/null 2>&1
fi
eval "$("$DEV" env bench)"
# nginx keeps KEEPALIVE idle FastCGI connections per process, as the
# shipped site does (nginx/sluice.conf: 4, for 8 workers per CPU), not the
# dev instance's 32: with that many a worker holds several, and a request
# nginx sends on one waits while the worker answers another.
NGINX_CONF=$VAR/nginx/nginx.conf
if ! grep -q "keepalive $KEEPALIVE; }" "$NGINX_CONF"; then
	sed -i -E "s/(upstream sluice_local \{ server [^;]*; keepalive )[0-9]+;/\1$KEEPALIVE;/" "$NGINX_CONF"
	grep -q "keepalive $KEEPALIVE; }" "$NGINX_CONF" ||
		{ echo "bench/retrieval_service.sh: no upstream keepalive in $NGINX_CONF" >&2; exit 1; }
	nginx -p "$VAR/nginx/" -c "$NGINX_CONF" -e "$VAR/log/nginx-error.log" -s reload
	sleep 1
fi

# Real text nobody here wrote: licences and package documentation.
{
	cat /usr/share/common-licenses/* 2>/dev/null
	find /usr/share/doc -name copyright -size -64k -print0 2>/dev/null |
		xargs -0 cat 2>/dev/null
} | tr -d '\r' | iconv -f utf-8 -t utf-8 -c >"$TMP/corpus.txt"

[[ ${COLD:-0} != 1 || -w /proc/sys/vm/drop_caches ]] ||
	{ echo "COLD=1 drops the page cache, which needs root" >&2; exit 2; }
echo "host: $(nproc) CPUs, workers = $WORKERS, nginx keepalive = $KEEPALIVE, clients = $CLIENTS${INLINE_MAX:+, question_inline_max_snippets = $INLINE_MAX}${SHARED:+, question_shared_passes = $SHARED}${QPARAMS:+, question fields $QPARAMS}${EMBED:+, embedder $EMBED}$([[ ${COLD:-0} != 1 ]] || echo ", index read back from disk")"
BENCH_DEV=$DEV BENCH_DB_SOCKET=$VAR/run/mysqld.sock BENCH_TMP=$TMP BENCH_LUA=$ROOT/bench/lib/questions.lua perl -I"$ROOT/t/lib" - "$TMP/corpus.txt" "$SNIPPETS" "$FILES" "$CLIENTS" "$QUESTIONS" \
	"${DOCS:-}" "${BATCH:-1000}" "${CAP:-600}" "${INGEST_ONLY:-0}" <<'PERL'
use strict;
use warnings;
use Socket qw(IPPROTO_TCP TCP_NODELAY);
use IO::Socket::SSL qw(SSL_VERIFY_NONE);
use JSON::PP;
use MIME::Base64 qw(encode_base64);
use List::Util qw(sum0);
use POSIX ();
use Time::HiRes qw(time sleep);

my ($corpus, $snippets, $files, $clients, $questions, $docs, $batch, $cap,
    $ingest_only) = @ARGV;
my $url = $ENV{SLUICE_URL};
my $auth = 'Basic ' . encode_base64($ENV{SLUICE_DEMO_BASIC}, '');
my $json = JSON::PP->new->utf8;
# QPARAMS: more fields of every question of (2), e.g. the exact vector path
# '{"hybrid":false,"maximal_marginal_relevance":false}'.
my $qparams = $json->decode($ENV{QPARAMS} || '{}');
my $poll = $ENV{POLL} || 0.05;
# A keep-alive HTTP/1.1 client that writes each request in one piece with
# TCP_NODELAY: a request split into writes meets Nagle and delayed ACKs and
# measures 40 ms of client stall instead of the server.
sub ua {
	my ($host, $port) = $url =~ m{^https://([^/:]+):(\d+)};
	my $s = IO::Socket::SSL->new(PeerHost => $host, PeerPort => $port,
				     SSL_verify_mode => SSL_VERIFY_NONE) or die "connect: $!";
	setsockopt($s, IPPROTO_TCP, TCP_NODELAY, 1);
	return { s => $s, host => "$host:$port" };
}
# ($status, decoded body); with $raw, ($status, the body's text).
sub call {
	my ($ua, $m, $path, $body, $ct, $raw) = @_;
	$body = $json->encode($body) if ref $body;
	my $req = "$m $path HTTP/1.1\r\nHost: $ua->{host}\r\nAuthorization: $auth\r\n";
	$req .= "Content-Type: " . ($ct // 'application/json') . "\r\nContent-Length: "
		. length($body) . "\r\n" if defined $body;
	$req .= "\r\n" . ($body // '');
	my $s = $ua->{s};
	print {$s} $req or die "write: $!";
	my ($head, $buf) = ('', '');
	while ($head !~ /\r\n\r\n/) {
		my $n = sysread($s, my $chunk, 65536) or die "read: $!";
		$head .= $chunk;
	}
	($head, $buf) = split /\r\n\r\n/, $head, 2;
	my ($status) = $head =~ m{^HTTP/1\.\d (\d+)};
	my ($len) = $head =~ /^Content-Length:\s*(\d+)/mi;
	$len //= 0;
	while (length $buf < $len) {
		my $n = sysread($s, my $chunk, 65536) or die "read: $!";
		$buf .= $chunk;
	}
	return ($status, $buf) if $raw;
	my $d = length $buf ? eval { $json->decode($buf) } : undef;
	return ($status, $d);
}

# CPU milliseconds used so far (user + system) by each process, with its
# reaped children's: [name, ms] by pid.  The name is the one in /proc, the
# bench's clients' (pids given: still unreaped, their time is theirs, not
# yet their parent's) "clients", this process's "bench"; kernel threads
# are "kernel" (their names change with their work).  sluice work's
# children end while questions run (each after at most a second of
# rounds): their time becomes their parent's when it reaps them, so it is
# counted there (until 2026-12-04 it was missed).
sub cpu_by_pid {
	my %client = map { $_ => 1 } @_;
	my $hz = POSIX::sysconf(POSIX::_SC_CLK_TCK());
	my %s;
	for my $stat (glob '/proc/[0-9]*/stat') {
		open my $fh, '<', $stat or next;
		my $l = <$fh> // next;
		my ($pid, $comm, $rest) = $l =~ /^(\d+) \((.*)\) (.*)$/ or next;
		my @f = split ' ', $rest;    # from field 3 (state) on
		my $who = $client{$pid} ? 'clients' : $pid == $$ ? 'bench'
			: $f[6] & 0x00200000 ? 'kernel' : $comm;    # flags: PF_KTHREAD
		# utime, stime, cutime, cstime
		$s{$pid} = [ $who, ($f[11] + $f[12] + $f[13] + $f[14]) / $hz * 1000 ];
	}
	return %s;
}

# The server's counters (SHOW GLOBAL STATUS), through the instance's socket.
sub db_sql {
	my @cmd = ('mariadb', '--no-defaults', "--socket=$ENV{BENCH_DB_SOCKET}", '-uroot',
		   '-N', '-B', '-e', $_[0]);
	open my $p, '-|', @cmd or die "mariadb: $!";
	my @rows = map { chomp; [ split /\t/ ] } <$p>;
	close $p;
	return @rows;
}

sub db_status {
	my @cmd = ('mariadb', '--no-defaults', "--socket=$ENV{BENCH_DB_SOCKET}", '-uroot',
		   '-N', '-B', '-e', 'SHOW GLOBAL STATUS');
	open my $p, '-|', @cmd or die "mariadb: $!";
	my %v = map { chomp; split /\t/, $_, 2 } <$p>;
	close $p;
	return %v;
}

open my $fh, '<', $corpus or die "$corpus: $!";
my $text = do { local $/; <$fh> };
my @lines = grep { length > 30 && /[a-z]{4}/ } split /\n/, $text;
# About 700 characters per snippet (chunk_size 800, overlap 100).
my $want = $snippets * 700;
$text .= "\n\n" . $text while length $text < $want;
$text = substr($text, 0, $want);

my $ua = ua();

# (1) ingestion
my ($st, $d) = call($ua, POST => '/dataset', { name => 'bench' });
die "POST /dataset: $st" unless $st == 201;
my $id = $d->{dataset_id};
my $bnd = "bench$$";
my $per = int(length($text) / $files) + 1;
my $body = '';
for my $i (0 .. $files - 1) {
	my $part = substr($text, $i * $per, $per);
	next unless length $part;
	$body .= "--$bnd\r\nContent-Disposition: form-data; name=\"file\"; filename=\"part$i.txt\"\r\n\r\n$part\r\n";
}
$body .= "--$bnd--\r\n";
my $t0 = time;
($st, $d) = call($ua, POST => "/dataset/$id/documents", $body, "multipart/form-data; boundary=$bnd");
die "POST documents: $st" unless $st == 202;
my $ds;
while (1) {
	(undef, $ds) = call($ua, GET => "/dataset/$id");
	last if $ds->{status} ne 'processing';
	sleep $poll;
}
my $t = time - $t0;
die "ingestion ended $ds->{status}: " . ($ds->{error} // '') unless $ds->{status} eq 'success';
printf "ingestion: %d documents, %d snippets (%.1f MB of text) in %.2f s: %.0f snippets/s\n",
	$ds->{document_count}, $ds->{snippet_count}, length($text) / 1e6, $t, $ds->{snippet_count} / $t;

# (3) the ingestion curve: many one-snippet documents, in batches
for my $n (split ' ', $docs) {
	my ($s, $dd) = call($ua, POST => '/dataset', { name => "bench-$n" });
	die "POST /dataset: $s" unless $s == 201;
	my $did = $dd->{dataset_id};
	# The bodies are encoded before the clock starts: JSON::PP took about
	# 5 s of this machine's two cores for 100,000 documents, time the
	# service then did not have.
	my @bodies;
	for (my $i = 0; $i < $n; $i += $batch) {
		my @batch;
		for my $j ($i .. ($i + $batch < $n ? $i + $batch : $n) - 1) {
			my $len = 300 + ($j * 7919) % 300;
			my $off = ($j * 104729) % (length($text) - $len);
			push @batch, { text => "doc $j: " . substr($text, $off, $len),
				       metadata => { n => $j, source => "doc-$j.txt" } };
		}
		push @bodies, $json->encode({ documents => \@batch });
	}
	my $t1 = time;
	for my $body (@bodies) {
		# The answer (each document's id, 39 KB a batch) is not decoded:
		# JSON::PP took 15 ms of the machine's two cores for each, time
		# the service then did not have and that a client in C would not
		# spend.
		($s) = call($ua, POST => "/dataset/$did/documents", $body, undef, 1);
		die "POST documents: $s" unless $s == 202;
	}
	my $posted = time - $t1;
	my ($dsn, @polls);
	while (1) {
		my $p0 = time;
		(undef, $dsn) = call($ua, GET => "/dataset/$did");
		push @polls, (time - $p0) * 1000 if $dsn->{status} eq 'processing';
		last if $dsn->{status} ne 'processing' || time - $t1 > $cap;
		# Polled at most a twentieth of the time so far apart: the
		# last poll's lateness adds at most 5 % to what is measured
		# (every POLL seconds, a size done in 0.1 s measured up to half
		# as long again).
		my $gap = (time - $t1) / 20;
		sleep($gap < $poll ? ($gap > 0.002 ? $gap : 0.002) : $poll);
	}
	my $tn = time - $t1;
	@polls = sort { $a <=> $b } @polls;
	printf "GETs of the processing dataset of %6d documents: %d, median %.2f ms, max %.2f ms\n",
		$n, scalar @polls, $polls[$#polls / 2], $polls[-1] if @polls;
	if ($dsn->{status} eq 'processing') {
		my $done = $dsn->{progress}{documents_done};
		printf "ingestion curve: %6d one-snippet documents NOT done in %.0f s " .
			"(posted in %.2f s): %d done, %.0f documents/s so far\n",
			$n, $tn, $posted, $done, $done / $tn;
	} else {
		die "ingestion ended $dsn->{status}: " . ($dsn->{error} // '')
			unless $dsn->{status} eq 'success';
		printf "ingestion curve: %6d one-snippet documents, %6d snippets in %7.2f s " .
			"(posted in %.2f s): %6.0f documents/s, %6.0f snippets/s\n",
			$dsn->{document_count}, $dsn->{snippet_count}, $tn, $posted,
			$dsn->{document_count} / $tn, $dsn->{snippet_count} / $tn;
		# What a client's GET of the settled dataset costs (one keep-alive
		# connection, 20 GETs): it must not grow with the dataset.
		my @g;
		for (1 .. 20) {
			my $g0 = time;
			call($ua, GET => "/dataset/$did");
			push @g, (time - $g0) * 1000;
		}
		@g = sort { $a <=> $b } @g;
		printf "GET of the settled dataset of %6d documents: median %.2f ms, max %.2f ms\n",
			$n, $g[10], $g[-1];
	}
	call($ua, DELETE => "/dataset/$did");
}
if ($ingest_only) {
	call($ua, DELETE => "/dataset/$id");
	exit 0;
}

# COLD=1: the index read back from disk, as after a reboot, not as the
# ingestion left it in the page cache (the workers restarted, so that
# none has it mapped).
if (($ENV{COLD} // '') eq '1') {
	system("\"\$BENCH_DEV\" serve-stop >/dev/null 2>&1 && sync && " .
	       "echo 3 >/proc/sys/vm/drop_caches && \"\$BENCH_DEV\" serve-start >/dev/null 2>&1") == 0
		or die "COLD=1: restarting serve with the page cache dropped failed\n";
}
# BACKLOG=N: the dataset holds N answered questions before (2), as one that
# has served for a while does, under random ids (those of a sluice before
# version 7 question ids) and each with the answer of a warm-up question:
# rag_questions then outgrows a buffer pool of 128 MB at about 30,000.  Before
# the warm-up: the Basic cache it fills lasts a minute.
if (my $backlog = $ENV{BACKLOG}) {
	my (undef, $q) = call($ua, POST => "/dataset/$id/question", { %$qparams, question => "backlog" });
	call($ua, GET => "/dataset/$id/question/$q->{question_id}?wait=5");
	my $b0 = time;
	for (my $done = 0; $done < $backlog; $done += 20000) {
		my $n = $backlog - $done < 20000 ? $backlog - $done : 20000;
		db_sql("INSERT INTO sluice.rag_questions (id, dataset_id, asked_by_user_id, " .
		       "question_text, params, status, relevant_documents, created_at, finished_at) " .
		       "SELECT CONCAT_WS('-', SUBSTR(h, 1, 8), SUBSTR(h, 9, 4), SUBSTR(h, 13, 4), " .
		       "SUBSTR(h, 17, 4), SUBSTR(h, 21, 12)), w.dataset_id, w.asked_by_user_id, " .
		       "'backlog', '{}', 'success', w.relevant_documents, UTC_TIMESTAMP(3), " .
		       "UTC_TIMESTAMP(3) FROM (SELECT MD5(CONCAT(RAND(), seq)) AS h FROM " .
		       "sluice.seq_1_to_$n) s JOIN (SELECT dataset_id, asked_by_user_id, relevant_documents " .
		       "FROM sluice.rag_questions WHERE dataset_id = '$id' AND status = 'success' " .
		       "LIMIT 1) w");
	}
	my ($rows, $mb) = @{ (db_sql("SELECT table_rows, ROUND((data_length + index_length) / 1048576) " .
				     "FROM information_schema.tables WHERE table_schema = 'sluice' " .
				     "AND table_name = 'rag_questions'"))[0] };
	printf "backlog: %d answered questions stored in %.1f s; rag_questions about %d rows, %d MB\n",
		$backlog, time - $b0, $rows, $mb;
}
# (2) latency: warm the workers' index cache first
for (1 .. 20) {
	my (undef, $q) = call($ua, POST => "/dataset/$id/question", { %$qparams, question => "warm up" });
	call($ua, GET => "/dataset/$id/question/$q->{question_id}?wait=5");
}
# STMTS=1: MariaDB's general log, in a table, for the questions of (2)
# only; it costs time, so the figures of such a run are not comparable.
my $stmts_on = sub {
	db_sql("SET GLOBAL log_output = 'TABLE'; TRUNCATE mysql.general_log; " .
	       "SET GLOBAL general_log = 1") if $ENV{STMTS};
};
my (@all, @stored, @after, $errors, %errors_by, %db0, %cpu0, %cpu1, $wall);
# The workers' shared passes over the index file (GET /_test/passes, where
# the bench's test build routes it): passes run and questions they ranked.
my $board = sub { my ($st, $b) = call(ua(), GET => '/_test/passes'); $st == 200 ? $b : undef };
my $board0 = $board->();
my $client = $ENV{CLIENT} || 'perl';
# A question's body: a line of the text, with QPARAMS' fields.
my $question = sub { return { %$qparams, question => substr($lines[int rand @lines], 0, 200) } };
my $take = sub {
	my ($lat, $el) = @_;
	push @all, $lat;
	push @stored, $el;
	push @after, $lat - $el;
};
if ($client eq 'wrk') {
	# wrk's threads as the clients (bench/lib/questions.lua), one
	# connection each.  The bodies are encoded before the clock starts.
	my $bodies = "$ENV{BENCH_TMP}/bodies.json";
	open my $bf, '>', $bodies or die "$bodies: $!";
	srand(7919);
	print {$bf} $json->encode($question->()), "\n" for 1 .. 1000;
	close $bf;
	local $ENV{BENCH_AUTH} = $auth;
	$stmts_on->();
	%db0 = db_status();
	%cpu0 = cpu_by_pid();
	my $pid = open(my $out, '-|', 'wrk', "-t$clients", "-c$clients", '-d3600s',
		       '--timeout', '30s', '-s', $ENV{BENCH_LUA}, $url, '--', $id, $bodies,
		       $questions) // die "wrk: $!";
	# wrk's main thread sleeps out its -d once its threads are done,
	# unless interrupted: SIGINT when it is the only one left.
	my $waker = fork // die;
	if (!$waker) {
		my $tasks = sub { scalar(() = glob "/proc/$pid/task/*") };
		sleep 0.01 until $tasks->() != 1;     # its threads started, or it is gone
		sleep 0.05 while $tasks->() > 1;
		kill 'INT', $pid if $tasks->() == 1;  # not once reaped
		POSIX::_exit(0);
	}
	my ($first, $last, @said);
	while (my $l = <$out>) {
		if ($l =~ /^q ([0-9.]+) (-?[0-9.]+)$/) { $take->($1, $2) }
		elsif ($l =~ /^err (.*?)\s*$/) { $errors++; $errors_by{$1}++ }
		elsif ($l =~ /^span ([0-9.]+) ([0-9.]+)$/) { ($first, $last) = ($1, $2) }
		else { push @said, $l }
	}
	# Its time is read before it is reaped, once it has ended (state Z).
	for (1 .. 100) {
		open my $sf, '<', "/proc/$pid/stat" or last;
		last if (<$sf> // '') =~ /^\d+ \(.*\) Z /;
		sleep 0.01;
	}
	%cpu1 = cpu_by_pid($pid);
	close $out;
	my $exit = $?;                       # wrk's, before the waker's
	waitpid($waker, 0);
	die "wrk failed (exit $exit):\n@said" if $exit || !defined $first || !@all;
	# From the first POST sent to the last answer read: wrk's 16 TLS
	# handshakes come before it.
	$wall = $last - $first;
} else {
	# The clock starts once every client is connected: 16 processes forked and
	# 16 TLS handshakes are not questions, and in a run of 800 questions they
	# were about a tenth of the time.
	pipe(my $ready_r, my $ready_w) or die;
	pipe(my $go_r, my $go_w) or die;
	my @kids;
	for my $c (1 .. $clients) {
		pipe(my $r, my $w) or die;
		my $pid = fork // die;
		if (!$pid) {
			close $r;
			close $ready_r;
			close $go_w;
			my $u = ua();
			srand($c * 7919);
			syswrite $ready_w, "1";
			sysread $go_r, my $go, 1;    # EOF: all connected
			my @lat;
			# The answers are read for the three fields needed, not decoded:
			# JSON::PP (pure Perl) decoding every 3 KB answer took about
			# as much of the two CPUs as the whole service did.  Inside
			# JSON strings quotes are escaped, so the first top-level
			# "status" is the question's.
			for (1 .. $questions) {
				my $t1 = time;
				my ($s, $p) = call($u, POST => "/dataset/$id/question", $question->(),
						   undef, 1);
				my ($qid) = $p =~ /"question_id":"([0-9a-f-]+)"/;
				if ($s != 200 || !$qid) { print {$w} "err POST $s\n"; next }
				my ($st, $el) = ('', -1);
				for (1 .. 10) {
					my ($gs, $g) = call($u, GET => "/dataset/$id/question/$qid?wait=5",
							    undef, undef, 1);
					($st) = $gs == 200 ? $g =~ /"status":"(\w+)"/ : ('');
					($el) = $g =~ /"elapsed_ms":([0-9.]+)/;
					last if ($st // '') ne 'processing';
				}
				if (($st // '') ne 'success') { print {$w} "err GET\n"; next }
				push @lat, sprintf "%.3f %.3f", (time - $t1) * 1000, $el // -1;
			}
			print {$w} "$_\n" for @lat;
			close $w;
			POSIX::_exit(0);
		}
		close $w;
		push @kids, [ $pid, $r ];
	}
	close $ready_w;
	close $go_r;
	sysread $ready_r, my $one, 1 for 1 .. $clients;
	$stmts_on->();
	%db0 = db_status();
	%cpu0 = cpu_by_pid(map { $_->[0] } @kids);
	$t0 = time;
	close $go_w;
	for my $k (@kids) {
		my $fh = $k->[1];
		while (my $l = <$fh>) {
			chomp $l;
			if ($l =~ /^err ?(.*?)\s*$/) { $errors++; $errors_by{$1}++; next }
			$take->(split ' ', $l);
		}
	}
	# Read before the clients are reaped: a process reaped is not in /proc.
	%cpu1 = cpu_by_pid(map { $_->[0] } @kids);
	waitpid($_->[0], 0) for @kids;
	$wall = time - $t0;
}
@all = sort { $a <=> $b } @all;
my $pct = sub { $all[ int($_[0] * $#all + 0.5) ] };
my $pc = sub { my ($p, @v) = @_; @v = sort { $a <=> $b } @v; $v[ int($p * $#v + 0.5) ] };
printf "POST-to-success latency, %d %s clients x %d questions over %d snippets: " .
	"p50 %.1f ms, p90 %.1f ms, p99 %.1f ms, max %.1f ms (%d answered, %d errors, %.0f questions/s)\n",
	$clients, $client, $questions, $ds->{snippet_count}, $pct->(0.5), $pct->(0.9), $pct->(0.99),
	$all[-1], scalar @all, $errors // 0, @all / $wall;
# An error says what was answered instead (a 429 of the password checks, a
# 502 of a worker that died): the count alone hides why.
print "errors: ", join(', ', map { "$errors_by{$_} x $_" }
		       sort { $errors_by{$b} <=> $errors_by{$a} } keys %errors_by), "\n"
	if %errors_by;
# Where the time goes: the question's elapsed_ms (created_at to finished_at,
# stamped by MariaDB) is the ranking; the rest of the latency is the POST's
# answer, the GETs and the wait until the waiter saw the stored result.
printf "of which stored (created_at to finished_at): p50 %.1f ms, p90 %.1f ms, p99 %.1f ms; " .
	"latency minus that: p50 %.1f ms, p90 %.1f ms, p99 %.1f ms\n",
	(map { $pc->($_, @stored) } 0.5, 0.9, 0.99), (map { $pc->($_, @after) } 0.5, 0.9, 0.99);
printf "target: p50 <= 20 ms: %s\n", $pct->(0.5) <= 20 ? 'met' : 'NOT met';
# MariaDB's work per question (the 16 clients' questions, the warm-up not
# counted; sluice work's polling of its queue is in it too): statements
# are what clients sent (Questions), commits every engine commit, an
# autocommitted statement's included.
my %db1 = db_status();
if ($ENV{STMTS}) {
	db_sql('SET GLOBAL general_log = 0');
	# A statement's kind: its text up to the first value or WHERE.
	printf "  %6.2f per question: %s\n", $_->[1] / (@all || 1), $_->[0] for db_sql(
	    "SELECT CONCAT(command_type, ' ', REGEXP_REPLACE(LEFT(argument, 200), " .
	    "'( WHERE |[0-9]{2,}|''|\\\\().*', '')), COUNT(*) FROM mysql.general_log " .
	    "GROUP BY 1 ORDER BY 2 DESC LIMIT 30");
}
my $each = sub { my $n = 0; $n += ($db1{$_} // 0) - ($db0{$_} // 0) for @_; $n / (@all || 1) };
printf "MariaDB per question: %.1f statements (%.1f prepared executions), %.1f commits, " .
	"%.1f rows written (%.1f inserted, %.1f updated, %.1f deleted), %.1f rows read, " .
	"%.2f redo log fsyncs\n",
	$each->('Questions'), $each->('Com_stmt_execute'), $each->('Handler_commit'),
	$each->(qw(Handler_write Handler_update Handler_delete)),
	$each->('Handler_write'), $each->('Handler_update'), $each->('Handler_delete'),
	$each->(map { "Handler_read_$_" } qw(first key last next prev rnd rnd_next)),
	$each->('Innodb_os_log_fsyncs');
my $board1 = $board->();
# A pass led after a tick (50 ms) instead of a wake: a worker gone, a wake
# lost, or a waiter whose tick came just as a pass ended.
printf "shared passes: %d for %d questions (%.1f a pass), %d led after a tick\n",
	$board1->{passes} - $board0->{passes}, $board1->{questions} - $board0->{questions},
	($board1->{questions} - $board0->{questions}) / ($board1->{passes} - $board0->{passes} || 1),
	($board1->{led_on_tick} // 0) - ($board0->{led_on_tick} // 0)
	if $board0 && $board1;
# CPU per question by program: far steadier than questions/s on a shared
# machine, and what the throughput on two CPUs follows.
# A process that ended in between gives back what it had used before: its
# whole time is in its parent's now.
my %per;
for my $pid (keys %{ { %cpu0, %cpu1 } }) {
	my $name = ($cpu1{$pid} // $cpu0{$pid})->[0];
	$per{$name} += (($cpu1{$pid} ? $cpu1{$pid}[1] : 0) - ($cpu0{$pid} ? $cpu0{$pid}[1] : 0))
		/ (@all || 1);
}
printf "CPU per question: %.2f ms (%s)\n", sum0(values %per),
	join ', ', map { sprintf '%s %.2f', $_, $per{$_} }
	grep { $per{$_} >= 0.005 } sort { $per{$b} <=> $per{$a} } keys %per;
# A new connection: the first one idled through the questions, past nginx's
# keepalive_timeout in a long run.
call(ua(), DELETE => "/dataset/$id");
PERL
