#!/usr/bin/perl
# nginx keeps its FastCGI connections to the workers open between requests
# (fastcgi_keep_conn, an upstream keepalive): requests reuse them; with two
# workers, connections kept idle never leave a new one waiting; what a
# handler leaves unread of a body never reaches the next request on the
# connection; and a connection handed over before slow work never waits for
# the slow request of the worker it lands on.

use strict;
use warnings;

use IO::Socket::UNIX;
use JSON::PP ();
use List::Util qw(sum0);
use Socket qw(SOCK_STREAM);
use Time::HiRes qw(sleep time);
use Test::More;

use SluiceTest;

my $SOCK = env('SLUICE_VAR') . '/run/sluice.sock';
my $token = env('SLUICE_DEMO_TOKEN');
my $master = master_pid();
is(scalar(my @w = worker_pids($master)), 2, 'two workers');

# The FastCGI connections the workers hold (inode => pid): their sockets the
# kernel lists as connected (St 03) on the listening socket's path.
sub fcgi_conns {
	my %on_path;
	open my $fh, '<', '/proc/net/unix' or die "/proc/net/unix: $!";
	<$fh>;
	while (<$fh>) {
		my @f = split;    # Num RefCount Protocol Flags Type St Inode Path
		$on_path{ $f[6] } = 1 if @f >= 8 && $f[5] eq '03' && $f[7] eq $SOCK;
	}
	my %held;
	for my $pid (worker_pids($master)) {
		opendir my $d, "/proc/$pid/fd" or next;
		for my $fd (readdir $d) {
			my $l = readlink("/proc/$pid/fd/$fd") // next;
			$held{$1} = $pid if $l =~ /^socket:\[(\d+)\]$/ && $on_path{$1};
		}
	}
	return \%held;
}

sub statuses {
	my %n;
	$n{ $_->{status} }++ for @_;
	return join ', ', map { "$_ x$n{$_}" } sort keys %n;
}

# --- requests reuse the kept connections ----------------------------------------

is(http(GET => '/_test/pid')->{status}, 200, "GET /_test/pid") for 1 .. 3;
# Connections an earlier test's reload closed stay in nginx's cache until
# nginx tries one and opens another instead: first go until ten requests in
# a row opened none.
my $before = fcgi_conns();
for (1 .. 5) {
	http(GET => '/_test/pid') for 1 .. 10;
	my $now = fcgi_conns();
	my $opened = grep { !$before->{$_} } keys %$now;
	$before = $now;
	last unless $opened;
}
cmp_ok(scalar keys %$before, '>=', 1, 'idle workers hold a kept FastCGI connection')
	or diag 'none seen on ' . $SOCK;
my @res = map { http(GET => '/_test/pid') } 1 .. 30;
is(statuses(@res), '200 x30', '30 requests one after the other: all 200');
# Only a connection opened would mean one was not reused: nginx closes one an
# earlier test left idle once its upstream keepalive_timeout (60 s) ran out,
# which may fall in these requests.
my $after = fcgi_conns();
is_deeply([ grep { !$before->{$_} } sort keys %$after ], [],
	  'they went over the kept connections: none opened');
cmp_ok(scalar keys %$after, '>=', 1, '... and the one they used is still held');

# --- kept connections never starve new ones ---------------------------------------
# 16 clients at once on two workers make nginx open about 16 connections and
# keep them.  A worker that could hold only one would sit on its kept
# connection while the others waited in the backlog for nginx's keepalive
# timeout (60 s), past these requests' 30 s.

@res = parallel_requests(clients => 16, requests => 2, path => '/_test/sleep?ms=100',
			 opts => { timeout => 30 });
is(statuses(@res), '200 x32', '16 clients at once on two workers: all 32 answered');
my $held = fcgi_conns();
cmp_ok(scalar keys %$held, '>', 2, 'the two workers now hold more connections than two')
	or diag 'held: ' . join ' ', map { "$_=$held->{$_}" } sort keys %$held;
@res = parallel_requests(clients => 4, requests => 5, path => '/_test/pid',
			 opts => { timeout => 30 });
is(statuses(@res), '200 x20', 'then 4 clients at once: all 20 answered');

# --- a password check does not hold the worker's other connections -----------------
# Checking a Basic password (a PBKDF2: half a second at the shipped cost,
# seconds under the sanitizers) is slow work: the worker first hands its
# other kept connections to the idle worker, so that requests nginx sends
# on them meanwhile do not wait for the check.

my $spread = sub { my %n; $n{$_}++ for values %{ fcgi_conns() }; return \%n };
my $n = $spread->();
for (1 .. 5) {
	last if (grep { ($n->{$_} // 0) >= 2 } worker_pids($master)) == 2;
	parallel_requests(clients => 16, requests => 1, path => '/_test/sleep?ms=100',
			  opts => { timeout => 30 });
	$n = $spread->();
}
is(scalar(grep { ($n->{$_} // 0) >= 2 } worker_pids($master)), 2,
   'each worker holds two kept connections or more') or diag explain $n;
my $kept = sum0(values %$n);
my $log0 = serve_log_offset();
my $wrong = http(GET => '/dataset/00000000-0000-4000-8000-000000000000',
		 { basic => "keep-conn-$$:not-the-password" });
is($wrong->{status}, 401, 'a wrong Basic password: 401 after its check');
# The worker logs the request once its answer is sent: the line may come
# just after the answer.
my $checker;
ok(wait_until(10, sub {
	($checker) = map { /\bpid=(\d+)\b.*\bstatus=401\b/ ? $1 : () }
		grep { m{path=/dataset/00000000-0000-4000-8000-000000000000 } }
		serve_log_since($log0);
	defined $checker;
}), 'the serve log names the worker that checked it') or diag serve_log_since($log0);
$n = $spread->();
is($n->{$checker // 0} // 0, 1, 'it kept only the connection of its request')
	or diag explain $n;
is(sum0(values %$n), $kept, 'the others went to the other worker, none closed')
	or diag explain $n;

# --- a body the handler did not read ------------------------------------------------
# A POST refused before its body is read (401) leaves the body on the kept
# connection, past the 8 KiB libfcgi reads at once.  The worker reads it to
# its end and keeps the connection; were the next request's first read to
# find it instead, the worker would drop the connection, racing nginx's
# next request on it.

$before = fcgi_conns();
my @bad;
for my $i (1 .. 10) {
	my $r = http(POST => '/_test/echo', { body => 'x' x 12000, content_type => 'application/json' });
	push @bad, "refused $i: $r->{status}" if $r->{status} != 401;
	$r = http(POST => '/_test/echo', { token => $token, json => { n => $i } });
	push @bad, "echo $i: $r->{status} $r->{content}"
		unless $r->{status} == 200 && ref $r->{json} eq 'HASH'
		    && ($r->{json}{echo}{n} // -1) == $i;
}
is(scalar @bad, 0, '10 times an unread 12 kB body, then a POST: 401, then the echo')
	or diag join "\n", @bad;
is_deeply([ sort keys %{ fcgi_conns() } ], [ sort keys %$before ],
	  'all over the same connections: none closed for the unread bodies');

# --- a worker's stop closes its kept connections without losing a request ------

my @old = worker_pids($master);
kill 'TERM', $old[0];
ok(wait_until(15, sub { !proc_alive($old[0]) }), "a worker stopped with TERM exits");
@res = map { http(GET => '/_test/pid') } 1 .. 20;
is(statuses(@res), '200 x20', 'requests right after: all 200 (a GET on a closed kept connection is sent again)');
my $post = http(POST => '/_test/echo', { token => $token, json => { after => 1 } });
is($post->{status}, 200, 'and a POST') or diag $post->{content};
ok(wait_workers($master, 2, 15, [ $old[0] ]), 'the master replaced it');

# --- a connection handed over meets a slow request in one wait --------------------
# The kernel wakes one idle worker for a connection handed over
# (EPOLLEXCLUSIVE): the first one waiting.  Should that worker's wait also
# return a slow request on a connection of its own, it takes the handed one
# first and hands it on before the slow work, waking the next idle worker.
# Left for after, a request already sent on it waited out the slow one while
# other workers idled (seen once in t/api/97, as 3.6 s).  Here the two
# events meet in one wait on purpose: serve_test_collect_delay_ms has a
# worker woken wait before it takes what is ready.  Three workers, raw
# FastCGI on their socket, so that the test knows who holds what: the first
# idle worker (the one the kernel wakes first) gets cc, a second one ca and
# cb, the third nothing.

sub fcgi_record {
	my ($type, $body) = @_;
	return pack('CCnnCC', 1, $type, 1, length $body, 0, 0) . $body;
}

sub fcgi_len { my $n = length $_[0]; return $n < 128 ? pack('C', $n) : pack('N', $n | 0x80000000) }

sub fcgi_send {
	my ($s, $uri) = @_;
	my ($path, $query) = split /\?/, $uri, 2;
	my %p = (REQUEST_METHOD => 'GET', REQUEST_URI => $uri, DOCUMENT_URI => $path,
		 QUERY_STRING => $query // '', SERVER_PROTOCOL => 'HTTP/1.1');
	my $pairs = join '', map { fcgi_len($_) . fcgi_len($p{$_}) . $_ . $p{$_} } sort keys %p;
	# role responder, flags keep-conn: the connection stays the worker's
	my $rec = fcgi_record(1, pack('nCx5', 1, 1)) . fcgi_record(4, $pairs) .
		  fcgi_record(4, '') . fcgi_record(5, '');
	syswrite($s, $rec) == length $rec or die "FastCGI write: $!";
}

sub fcgi_read_n {
	my ($s, $n) = @_;
	my $buf = '';
	while (length $buf < $n) {
		my $got = sysread($s, $buf, $n - length $buf, length $buf);
		die 'FastCGI read: ' . ($got // $!) unless $got;
	}
	return $buf;
}

# The answer's status and JSON body, once its END_REQUEST came.
sub fcgi_read {
	my ($s) = @_;
	my $out = '';
	while (1) {
		my (undef, $type, undef, $len, $pad) = unpack('CCnnC', fcgi_read_n($s, 8));
		my $body = fcgi_read_n($s, $len + $pad);
		$out .= substr($body, 0, $len) if $type == 6;
		last if $type == 3;
	}
	my ($head, $content) = split /\r\n\r\n/, $out, 2;
	my ($status) = $head =~ /^Status: (\d+)/mi;
	return { status => $status // 200, json => eval { JSON::PP->new->decode($content) } };
}

sub fcgi_open_pid {
	my $s = IO::Socket::UNIX->new(Type => SOCK_STREAM, Peer => $SOCK) or die "connect: $!";
	fcgi_send($s, '/_test/pid');
	return ($s, fcgi_read($s)->{json}{pid} // die 'no pid');
}

my $orig = conf_read();
END {
	local ($?, $@);
	eval { reload_serve($orig, 2) if conf_read() ne $orig; 1 }
		or print STDERR "# restoring the config failed: $@";
}
my $delay = 600;
reload_serve(conf_with($orig, workers => 3, serve_test_collect_delay_ms => $delay), 3);
# The worker a new connection wakes when all wait is the first in the
# kernel's order, for handed connections too: it gets cc.
sleep($delay * 2 / 1000);
my ($cc, $first) = fcgi_open_pid();
# While it is busy, new connections go to the others: until one holds two.
fcgi_send($cc, '/_test/sleep?ms=10000');
sleep($delay * 1.5 / 1000);
my (%by, $second, @spare);
for (1 .. 6) {
	my ($s, $pid) = fcgi_open_pid();
	push @{ $by{$pid} }, $s;
	last if ($second) = grep { @{ $by{$_} } >= 2 } keys %by;
}
ok($second && $second != $first, 'two connections to a second worker, one to the first')
	or diag explain { first => $first, by => \%by };
my ($ca, $cb) = @{ $by{$second} // [] };
@spare = map { @{ $by{$_} } } grep { $_ != $second } keys %by;
is(fcgi_read($cc)->{status}, 200, 'the first worker kept busy meanwhile');
sleep($delay * 2 / 1000);
# ca's worker starts its slow work (after its delay) and hands cb over; the
# first worker, woken for cb, waits its delay, in which cc's slow request
# and cb's quick one come.
fcgi_send($ca, '/_test/sleep?ms=9000&slow=true');
sleep($delay * 1.5 / 1000);
fcgi_send($cc, '/_test/sleep?ms=9000&slow=true');
fcgi_send($cb, '/_test/pid');
my $t0 = time;
my $quick = fcgi_read($cb);
my $took = time - $t0;
is($quick->{status}, 200, 'the request on the handed connection: 200');
cmp_ok($took, '<', 6, 'answered while both slow requests ran (9 s), not after')
	or diag "took ${took} s";
ok(($quick->{json}{pid} // 0) != $first && ($quick->{json}{pid} // 0) != $second,
   'by the third worker, idle until then');
is(fcgi_read($_)->{status}, 200, 'a slow request: 200') for $ca, $cc;
close $_ for $ca, $cb, $cc, @spare;
reload_serve($orig, 2);

done_testing();
