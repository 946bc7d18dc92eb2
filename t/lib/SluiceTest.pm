package SluiceTest;

# Shared code of the API tests in t/api/.  The stack under test is
# described by the SLUICE_* variables that `scripts/dev env test` prints;
# nothing here reads them at load time, so every test file compiles without
# a stack.
#
# Forked children (start_requests, parallel_requests) leave with
# POSIX::_exit so they never run a test file's END blocks or Test::More's
# summary.

use strict;
use warnings;

use Carp qw(croak);
use Digest::SHA qw(hmac_sha256 hmac_sha512 sha256_hex);
use Encode ();
use Exporter qw(import);
use File::Temp qw(tempfile tempdir);
use HTTP::Tiny;
use IO::Socket::SSL qw(SSL_VERIFY_NONE);
use JSON::PP ();
use SluiceOpenAPI ();
use MIME::Base64 qw(encode_base64 decode_base64);
use POSIX qw(WNOHANG);
use Test::More ();
use Test2::API ();
use Time::HiRes qw(time sleep);
use Time::Local qw(timegm_modern);

our @EXPORT = qw(
	env http raw_http header describe json_response_is iso_time_ok
	token craft_jwt jwt_secret jwt_payload b64url b64url_decode
	mysql sq run_cmd dev
	master_pid worker_pids waiter_pid proc_stat proc_alive wait_workers busy_worker
	wait_until
	serve_log_offset serve_log_since work_log_offset work_log_since
	start_requests parallel_requests
	conf_read conf_write conf_with reload_serve reload_stack
	json_encode json_decode
	wh_schema slurp
);

our $LAST_WAIT_ERROR;

# A handler that answers twice leaves "second response refused" in the
# serve log: any test file whose run adds such a line fails, whatever its
# own tests said.  (Only the process that loaded this module checks, not
# children it forks.)
my ($LOG_START, $LOG_PID) = ($ENV{SLUICE_SERVE_LOG} ? -s $ENV{SLUICE_SERVE_LOG} // 0 : undef, $$);
Test2::API::test2_add_callback_exit(sub {
	my ($ctx, $real, $new) = @_;
	return unless defined $LOG_START && $$ == $LOG_PID;
	my @twice = grep { /msg="second response refused"/ } serve_log_since($LOG_START);
	return unless @twice;
	$ctx->diag(scalar(@twice) . " \"second response refused\" line(s) in the serve log "
	    . "during this test:\n" . join("\n", @twice[0 .. ($#twice < 4 ? $#twice : 4)]));
	$$new ||= 1;
});

my $JSON = JSON::PP->new->utf8->canonical->allow_nonref;

sub json_encode { $JSON->encode($_[0]) }
sub json_decode { $JSON->decode($_[0]) }

# --- environment --------------------------------------------------------

sub env {
	my ($name) = @_;
	my $v = $ENV{$name};
	croak "$name is not set: run the API tests with `scripts/dev test`, "
	    . "or eval \"\$(scripts/dev env test)\" before prove"
		unless defined $v && length $v;
	return $v;
}

# --- HTTP ---------------------------------------------------------------

my (%UA, $UA_PID);

# One client per process (and per source address): a forked child must not
# share the parent's TLS state.  No keep-alive, so every request is a fresh
# connection and a retried idempotent request can never hide a failure.
sub _ua {
	my ($from) = @_;
	%UA = () if !defined $UA_PID || $UA_PID != $$;
	$UA_PID = $$;
	return $UA{ $from // '' } //= HTTP::Tiny->new(
		verify_SSL   => 0,
		SSL_options  => { SSL_verify_mode => SSL_VERIFY_NONE },
		keep_alive   => 0,
		timeout      => 30,
		max_redirect => 0,
		(defined $from ? (local_address => $from) : ()),
	);
}

sub _auth_headers {
	my ($o) = @_;
	my %h = %{ $o->{headers} || {} };
	$h{Authorization} = "Bearer $o->{token}" if defined $o->{token};
	$h{Authorization} = 'Basic ' . encode_base64($o->{basic}, '')
		if defined $o->{basic};
	$h{Authorization} = $o->{auth} if defined $o->{auth};
	return %h;
}

sub _body {
	my ($o, $h) = @_;
	my $body = $o->{body};
	if (exists $o->{json}) {
		$body = $JSON->encode($o->{json});
		$h->{'Content-Type'} = 'application/json'
			unless exists $o->{content_type};
	}
	$h->{'Content-Type'} = $o->{content_type} if defined $o->{content_type};
	return $body;
}

# Decode a JSON body when the response says it is JSON; then check the
# answer to $method $path against docs/openapi.yaml (SluiceOpenAPI), in the
# process that loaded this module only (a forked client's answers are
# checked when the parent reads them, in finish()).
sub _decorate {
	my ($res, $method, $path) = @_;
	$res->{headers} ||= {};
	$res->{content} //= '';
	my $ct = header($res, 'content-type') // '';
	if ($res->{status} != 599 && $ct =~ m{^application/json}i
	    && length $res->{content}) {
		$res->{json} = eval { $JSON->decode($res->{content}) };
		$res->{json_error} = $@ unless defined $res->{json};
	}
	SluiceOpenAPI::check($res, $method, $path) if $$ == $LOG_PID;
	return $res;
}

# http($method, $path, \%opts) -> {status, reason, headers, content, json}
#   token => JWT (sent as "Bearer <jwt>"), auth => raw Authorization value,
#   basic => "user:password", headers => {...}, json => data (encoded,
#   Content-Type application/json), body => bytes, content_type => value,
#   no_content_type => 1 (send the body with no Content-Type at all),
#   timeout => seconds, from => a loopback source address (127.0.0.2 ...:
#   a client other than the suite's 127.0.0.1, which the test stack's nginx
#   exempts from its rate limits).
sub http {
	my ($method, $path, $o) = @_;
	$o ||= {};
	return raw_http($method, $path, $o) if $o->{no_content_type};
	my %h = _auth_headers($o);
	my $body = _body($o, \%h);
	my %args = (headers => \%h);
	$args{content} = $body if defined $body;
	my $ua = _ua($o->{from});
	local $ua->{timeout} = $o->{timeout} if $o->{timeout};
	my $res = $ua->request($method, env('SLUICE_URL') . $path, \%args);
	return _decorate({ %$res }, $method, $path);
}

sub _hostport {
	my $url = env('SLUICE_URL');
	$url =~ m{^https://([^/:]+|\[[^\]]+\]):(\d+)/?$}
		or croak "SLUICE_URL '$url' is not https://host:port";
	return ($1, $2);
}

# The same as http(), written by hand over TLS, for requests HTTP::Tiny
# will not send (it always adds a Content-Type to a body).  HTTP/1.0, so
# the answer is never chunked and ends when the server closes.
sub raw_http {
	my ($method, $path, $o) = @_;
	$o ||= {};
	my ($host, $port) = _hostport();
	my %h = _auth_headers($o);
	my $body = $o->{no_content_type} ? $o->{body} : _body($o, \%h);
	delete $h{'Content-Type'} if $o->{no_content_type};
	my $res = eval {
		local $SIG{ALRM} = sub { die "timeout\n" };
		local $SIG{PIPE} = 'IGNORE';
		alarm($o->{timeout} || 30);
		my $s = IO::Socket::SSL->new(
			PeerHost        => $host,
			PeerPort        => $port,
			SSL_verify_mode => SSL_VERIFY_NONE,
			(defined $o->{from} ? (LocalAddr => $o->{from}) : ()),
		) or die "connect: $IO::Socket::SSL::SSL_ERROR $!\n";
		my $req = "$method $path HTTP/1.0\r\nHost: $host:$port\r\n";
		$req .= "$_: $h{$_}\r\n" for sort keys %h;
		$req .= 'Content-Length: ' . length($body) . "\r\n"
			if defined $body;
		$req .= "\r\n";
		$req .= $body if defined $body;
		print {$s} $req or die "write: $!\n";
		my $raw = '';
		while (1) {
			my $n = sysread($s, my $buf, 65536);
			die "read: $!\n" unless defined $n;
			last if $n == 0;
			$raw .= $buf;
		}
		close $s;
		alarm 0;
		my ($head, $content) = split /\r\n\r\n/, $raw, 2;
		my ($status_line, @lines) = split /\r\n/, $head // '';
		$status_line =~ m{^HTTP/\d\.\d (\d{3}) ?(.*)$}
			or die "bad status line '$status_line'\n";
		my %rh;
		for (@lines) {
			my ($k, $v) = /^([^:]+):\s*(.*?)\s*$/ or next;
			$k = lc $k;
			if (exists $rh{$k}) {
				$rh{$k} = [ ref $rh{$k} ? @{ $rh{$k} } : $rh{$k}, $v ];
			} else {
				$rh{$k} = $v;
			}
		}
		{ status => $1, reason => $2, headers => \%rh,
		  content => $content // '' };
	};
	alarm 0;
	$res ||= { status => 599, reason => 'Internal Exception',
		   headers => {}, content => $@ };
	return _decorate($res, $method, $path);
}

# A response header, case-insensitive; repeated headers joined by ", ".
sub header {
	my ($res, $name) = @_;
	my $v = $res->{headers}{ lc $name };
	return ref $v ? join(', ', @$v) : $v;
}

# One line saying what came back, for diag() after a failure.
sub describe {
	my ($res) = @_;
	my $c = $res->{content} // '';
	$c = substr($c, 0, 600) . '...' if length $c > 600;
	my $h = join '; ', map { "$_: " . header($res, $_) }
		sort keys %{ $res->{headers} || {} };
	return "got HTTP $res->{status} [$h] $c";
}

# Status, a JSON Content-Type, and (when $body is defined) exactly $body.
sub json_response_is {
	my ($res, $status, $body, $name) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my $ok = Test::More::is($res->{status}, $status, "$name: status $status");
	$ok = Test::More::like(header($res, 'content-type') // '',
		qr{^application/json(?:\s*;\s*charset=utf-8)?$}i,
		"$name: Content-Type application/json") && $ok;
	# Every answer of sluice names its request, and a 5xx body repeats the
	# id (docs/api.md, "Request ids").
	my $rid = header($res, 'x-request-id');
	$ok = Test::More::like($rid // '', qr/^[A-Za-z0-9._:-]{1,64}$/,
		"$name: X-Request-Id") && $ok;
	if (defined $body && $status >= 500 && ref $body eq 'HASH'
	    && !exists $body->{request_id}) {
		$body = { %$body, request_id => $rid };
	}
	if (defined $body) {
		$ok = Test::More::is_deeply($res->{json}, $body, "$name: body")
			&& $ok;
	} else {
		$ok = Test::More::ok(ref $res->{json}, "$name: body is JSON")
			&& $ok;
	}
	Test::More::diag(describe($res)) unless $ok;
	return $ok;
}

# An ISO 8601 UTC time ("2026-11-22T10:00:00.123Z") within $slack seconds
# of now (the server runs on this machine, so the clocks agree).
sub iso_time_ok {
	my ($ts, $name, $slack) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	$slack //= 10;
	my @f = ($ts // '') =~
	    /^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(\.\d{1,9})?Z$/;
	Test::More::ok(@f, "$name is ISO 8601 UTC")
		or return Test::More::diag("got '" . ($ts // 'undef') . "'");
	my $t = eval { timegm_modern($f[5], $f[4], $f[3], $f[2], $f[1] - 1, $f[0]) };
	Test::More::ok(defined $t, "$name is a real date") or return;
	$t += $f[6] if defined $f[6];
	my $skew = abs($t - time);
	Test::More::cmp_ok($skew, '<=', $slack, "$name within ${slack}s of now");
}

# --- tokens -------------------------------------------------------------

sub b64url {
	my ($bytes) = @_;
	(my $s = encode_base64($bytes, '')) =~ tr{+/}{-_};
	$s =~ s/=+$//;
	return $s;
}

sub b64url_decode {
	my ($s) = @_;
	(my $t = $s) =~ tr{-_}{+/};
	$t .= '=' x ((4 - length($t) % 4) % 4);
	return decode_base64($t);
}

# The server's HS256 key: the secret file without trailing whitespace.
sub jwt_secret {
	my $f = env('SLUICE_JWT_SECRET_FILE');
	open my $fh, '<:raw', $f or croak "cannot read $f: $!";
	local $/;
	my $s = <$fh>;
	$s =~ s/\s+\z//;
	croak "$f is empty" unless length $s;
	return $s;
}

# craft_jwt(\%header, \%payload, $secret_or_undef, %opts): any token at all.
# Header and payload may be hash refs (JSON-encoded) or raw strings; the
# secret defaults to the server's.  Options: hmac => 'sha512' signs with
# HMAC-SHA512; signature => 'text' uses that base64url text as the third
# part ('' for an unsigned token).
sub craft_jwt {
	my ($header, $payload, $secret, %o) = @_;
	$header //= { alg => 'HS256', typ => 'JWT' };
	my $h = ref $header ? $JSON->encode($header) : $header;
	my $p = ref $payload ? $JSON->encode($payload) : $payload;
	my $input = b64url($h) . '.' . b64url($p);
	my $sig;
	if (exists $o{signature}) {
		$sig = $o{signature};
	} else {
		$secret //= jwt_secret();
		my $mac = ($o{hmac} // 'sha256') eq 'sha512'
		    ? hmac_sha512($input, $secret) : hmac_sha256($input, $secret);
		$sig = b64url($mac);
	}
	return "$input.$sig";
}

# The decoded payload of a token (no verification).
sub jwt_payload {
	my ($token) = @_;
	my @p = split /\./, $token, -1;
	croak "not a JWT: '$token'" unless @p == 3;
	return $JSON->decode(b64url_decode($p[1]));
}

# token(customer => 'demo', sub => ..., permissions => [...] or 'A,B' or '',
#       ttl => seconds): a JWT minted by `sluice token`.
sub token {
	my (%o) = @_;
	my @argv = (env('SLUICE_BIN'), 'token', '-c', env('SLUICE_CONF'),
		    '--customer', $o{customer} // 'demo');
	push @argv, '--sub', $o{sub} if defined $o{sub};
	if (exists $o{permissions}) {
		my $p = $o{permissions};
		push @argv, '--permissions', ref $p ? join(',', @$p) : $p;
	}
	push @argv, '--ttl', $o{ttl} if defined $o{ttl};
	my $r = run_cmd(\@argv);
	croak "sluice token failed (exit $r->{exit}): $r->{err}" if $r->{exit};
	(my $t = $r->{out}) =~ s/\s+\z//;
	return $t;
}

# --- warehouse ----------------------------------------------------------

# The database where a customer's logical schema lives (wh_schema_physical in
# src/db/warehouse.c): "wh_", the name in lower case with every character
# but [a-z0-9_] as "_", cut to 44 characters, "_", 16 hex digits of
# SHA-256(customer id, newline, the name in ASCII lower case).
sub wh_schema {
	my ($customer_id, $logical) = @_;
	(my $low = $logical) =~ tr/A-Z/a-z/;
	my $chars = Encode::decode('UTF-8', $low);
	$chars =~ s/[^a-z0-9_]/_/g;
	return 'wh_' . substr($chars, 0, 44) . '_'
	    . substr(sha256_hex("$customer_id\n$low"), 0, 16);
}

# --- commands -----------------------------------------------------------

# run_cmd(\@argv, stdin => $bytes, timeout => $s) -> {exit, signal, out, err}
# Output goes to temporary files, not pipes: a command that leaves a
# daemon behind (scripts/dev serve-start) must not keep us waiting for EOF.
sub run_cmd {
	my ($argv, %o) = @_;
	my ($in_fh, $in) = tempfile(UNLINK => 1);
	print {$in_fh} $o{stdin} if defined $o{stdin};
	close $in_fh;
	my (undef, $out) = tempfile(UNLINK => 1);
	my (undef, $err) = tempfile(UNLINK => 1);
	my $pid = fork // croak "fork: $!";
	if (!$pid) {
		open STDIN, '<', $in or POSIX::_exit(126);
		open STDOUT, '>', $out or POSIX::_exit(126);
		open STDERR, '>', $err or POSIX::_exit(126);
		{ exec { $argv->[0] } @$argv }
		print STDERR "exec $argv->[0]: $!\n";
		POSIX::_exit(127);
	}
	my $deadline = time + ($o{timeout} // 300);
	my $timed_out = 0;
	while (waitpid($pid, WNOHANG) == 0) {
		if (time > $deadline) {
			$timed_out = 1;
			kill 'TERM', $pid;
			sleep 2;
			kill 'KILL', $pid;
			waitpid($pid, 0);
			last;
		}
		sleep 0.05;
	}
	my $status = $?;
	my %r = (exit => $status >> 8, signal => $status & 127,
		 out => _slurp($out), err => _slurp($err));
	if ($timed_out) {
		$r{exit} = 124;
		$r{err} .= "\n(timed out after " . ($o{timeout} // 300) . "s)";
	}
	return \%r;
}

sub _slurp { slurp($_[0]) // '' }

# slurp($file): its bytes, or undef when it cannot be read.
sub slurp {
	my ($f) = @_;
	open my $fh, '<:raw', $f or return undef;
	local $/;
	return scalar <$fh>;
}

# mysql($sql): rows as array refs (list context) or the output (scalar).
sub mysql {
	my ($sql) = @_;
	my $r = run_cmd(['sh', '-c', env('SLUICE_MYSQL') . ' -N -B -e "$1"',
			 'sh', $sql]);
	croak "mysql failed (exit $r->{exit}): $r->{err}" if $r->{exit};
	return map { [ split /\t/, $_, -1 ] } split /\n/, $r->{out}
		if wantarray;
	(my $out = $r->{out}) =~ s/\n\z//;
	return $out;
}

# sq($v): $v as an SQL string literal for mysql() (NULL when undef).
sub sq {
	my ($v) = @_;
	return 'NULL' unless defined $v;
	(my $q = $v) =~ s/(['\\])/\\$1/g;
	return "'$q'";
}

# dev('db-stop'): scripts/dev for this instance -> run_cmd result.
sub dev {
	my ($sub, @args) = @_;
	local $ENV{SLUICE_INSTANCE} = env('SLUICE_INSTANCE');
	return run_cmd([ env('SLUICE_DEV'), $sub, @args ], timeout => 180);
}

# --- processes ----------------------------------------------------------

sub master_pid {
	my $f = env('SLUICE_SERVE_PID');
	open my $fh, '<', $f or croak "no master pid file $f: $!";
	my $pid = <$fh> // '';
	$pid =~ s/\s+//g;
	croak "master pid file $f holds '$pid'" unless $pid =~ /^[1-9]\d*$/;
	return $pid;
}

# {pid, comm, state, ppid} from /proc/PID/stat, or undef.  comm may hold
# spaces and parentheses, so the fields are split after the last ')'.
sub proc_stat {
	my ($pid) = @_;
	open my $fh, '<', "/proc/$pid/stat" or return undef;
	my $line = <$fh>;
	return undef unless defined $line;
	my $open = index($line, '(');
	my $close = rindex($line, ')');
	return undef if $open < 0 || $close < $open;
	my @f = split ' ', substr($line, $close + 1);
	return { pid => $pid, comm => substr($line, $open + 1, $close - $open - 1),
		 state => $f[0], ppid => $f[1] };
}

# Running: exists and is not a zombie waiting for its parent.
sub proc_alive {
	my ($pid) = @_;
	my $st = proc_stat($pid) or return 0;
	return $st->{state} !~ /^[ZX]/;
}

# Live workers of the master, sorted: its children but the waiter (the
# one process holding long polls, named sluice-wait).
sub worker_pids {
	my ($master) = @_;
	$master //= master_pid();
	opendir my $d, '/proc' or croak "/proc: $!";
	my @pids;
	for my $p (grep { /^\d+$/ } readdir $d) {
		my $st = proc_stat($p) or next;
		next unless $st->{ppid} == $master && $st->{state} !~ /^[ZX]/;
		next if $st->{comm} eq 'sluice-wait';
		push @pids, $p + 0;
	}
	return sort { $a <=> $b } @pids;
}

# The master's waiter, or undef.
sub waiter_pid {
	my ($master) = @_;
	$master //= master_pid();
	opendir my $d, '/proc' or croak "/proc: $!";
	for my $p (grep { /^\d+$/ } readdir $d) {
		my $st = proc_stat($p) or next;
		return $p + 0 if $st->{ppid} == $master && $st->{comm} eq 'sluice-wait'
			&& $st->{state} !~ /^[ZX]/;
	}
	return undef;
}

# Wait until the master has exactly $n workers and none of @$gone; the new
# list, or an empty list on timeout.
sub wait_workers {
	my ($master, $n, $timeout, $gone) = @_;
	my %old = map { $_ => 1 } @{ $gone || [] };
	my @w;
	wait_until($timeout, sub {
		@w = worker_pids($master);
		@w == $n && !grep { $old{$_} } @w;
	}) or return ();
	return @w;
}

# A worker of $master that is sleeping in a handler (/_test/sleep, a test
# pause), seen through the kernel's wait channel; undef when none is.  Idle
# workers wait in ppoll(), so only a sleep counts.
sub busy_worker {
	my ($master) = @_;
	for my $w (worker_pids($master)) {
		open my $fh, '<', "/proc/$w/wchan" or next;
		my $wchan = <$fh> // '';
		return $w if $wchan =~ /nanosleep/;
	}
	return undef;
}

# --- waiting ------------------------------------------------------------

# Poll $code until it returns true (its value) or $timeout seconds pass
# (false).  A die counts as false; the last one is in $LAST_WAIT_ERROR.
sub wait_until {
	my ($timeout, $code, $interval) = @_;
	$interval //= 0.1;
	my $deadline = time + $timeout;
	while (1) {
		my $v = eval { $code->() };
		$LAST_WAIT_ERROR = $@ if $@;
		return $v if $v;
		return 0 if time >= $deadline;
		sleep $interval;
	}
}

# --- serve and work logs ------------------------------------------------

sub serve_log_offset {
	return -s env('SLUICE_SERVE_LOG') // 0;
}

# What the serve log gained since $offset: lines (list) or text (scalar).
# A log that shrank was truncated or replaced, so it is read from the start.
sub serve_log_since {
	return log_file_since(env('SLUICE_SERVE_LOG'), @_);
}

# The same for `sluice work`'s log.
sub work_log_offset {
	return -s env('SLUICE_WORK_LOG') // 0;
}

sub work_log_since {
	return log_file_since(env('SLUICE_WORK_LOG'), @_);
}

sub log_file_since {
	my ($f, $offset) = @_;
	open my $fh, '<:raw', $f or return wantarray ? () : '';
	$offset = 0 if !$offset || (-s $fh // 0) < $offset;
	seek $fh, $offset, 0;
	local $/;
	my $text = <$fh> // '';
	return wantarray ? split(/\n/, $text) : $text;
}

# --- parallel requests --------------------------------------------------

# start_requests(clients => N, path => ..., method => 'GET', opts => {...},
#                requests => per client | duration => seconds | neither:
#                until ->stop, pause => seconds between requests)
# Forks N children that each fire requests one after another; ->finish (or
# ->stop) collects {client, start, end, status, content, json} records,
# sorted by start time.  Each child keeps its results and writes them to its
# pipe at the end, so a full pipe can never stall a request; meanwhile
# ->answered counts the answers so far, and ->wait_answered waits for more.
sub start_requests {
	my (%o) = @_;
	my $clients = $o{clients} // 1;
	my $method = $o{method} // 'GET';
	my $path = $o{path} // croak 'start_requests: path';
	my $dir = tempdir(CLEANUP => 1);
	my $stopfile = "$dir/stop";
	my $limit = time + ($o{duration} // $o{max_duration} // 120);
	env('SLUICE_URL');    # fail here, not in every child
	my @kids;
	for my $c (1 .. $clients) {
		pipe(my $r, my $w) or croak "pipe: $!";
		my $pid = fork // croak "fork: $!";
		if (!$pid) {
			close $r;
			my @res;
			open my $done, '>>', "$dir/answered.$c" or POSIX::_exit(126);
			eval {
				my $n = 0;
				while (!defined $o{requests} || $n < $o{requests}) {
					last if time >= $limit || -e $stopfile;
					my $t0 = time;
					my $res = http($method, $path, $o{opts} || {});
					push @res, { client => $c, start => $t0,
						     end => time, status => $res->{status},
						     ct => header($res, 'content-type'),
						     content => substr($res->{content}, 0, 65536),
						     # the whole body, for the parent's check
						     (length $res->{content} <= 65536
						      ? (method => $method, path => $path) : ()) };
					$n++;
					syswrite $done, '.';
					sleep $o{pause} if $o{pause};
				}
				1;
			} or push @res, { client => $c, start => time, end => time,
					  status => 'died', content => "$@" };
			binmode $w;
			print {$w} $JSON->encode($_), "\n" for @res;
			close $w;
			POSIX::_exit(0);
		}
		close $w;
		push @kids, { pid => $pid, fh => $r };
	}
	return bless { kids => \@kids, stopfile => $stopfile, dir => $dir },
		'SluiceTest::Requests';
}

sub parallel_requests {
	return start_requests(@_)->finish;
}

package SluiceTest::Requests;

sub stop {
	my ($self) = @_;
	if (open my $fh, '>', $self->{stopfile}) {
		close $fh;
	}
	return $self->finish;
}

# Answers received so far by all clients (each child adds a byte per answer).
sub answered {
	my ($self) = @_;
	my $n = 0;
	$n += -s $_ // 0 for glob "$self->{dir}/answered.*";
	return $n;
}

# Wait until $n more answers than now (or than $since) have come; true or
# false on timeout.
sub wait_answered {
	my ($self, $n, $timeout, $since) = @_;
	my $target = ($since // $self->answered) + $n;
	return SluiceTest::wait_until($timeout, sub { $self->answered >= $target });
}

sub finish {
	my ($self) = @_;
	return @{ $self->{results} } if $self->{results};
	my @all;
	for my $k (@{ $self->{kids} }) {
		my $fh = $k->{fh};
		binmode $fh;
		while (my $line = <$fh>) {
			my $rec = SluiceTest::json_decode($line);
			$rec->{headers} = { 'content-type' => $rec->{ct} // '' };
			$rec->{partial} = 1;    # no headers but Content-Type
			SluiceTest::_decorate($rec, $rec->{method}, $rec->{path})
				if $rec->{status} =~ /^\d+$/;
			push @all, $rec;
		}
		close $fh;
		waitpid($k->{pid}, 0);
	}
	$self->{results} = [ sort { $a->{start} <=> $b->{start} } @all ];
	return @{ $self->{results} };
}

package SluiceTest;

# --- config -------------------------------------------------------------

sub conf_read {
	my $f = env('SLUICE_CONF');
	open my $fh, '<:raw', $f or croak "cannot read $f: $!";
	local $/;
	return scalar <$fh>;
}

# Replace the config file atomically, so the master never reads half of it.
sub conf_write {
	my ($text) = @_;
	my $f = env('SLUICE_CONF');
	my $mode = (stat $f)[2];
	my $tmp = "$f.tmp$$";
	open my $fh, '>:raw', $tmp or croak "cannot write $tmp: $!";
	print {$fh} $text;
	close $fh or croak "cannot write $tmp: $!";
	chmod($mode & 07777, $tmp) if defined $mode;
	rename $tmp, $f or croak "cannot rename $tmp to $f: $!";
}

# Write $text as the config and HUP the master; returns once every worker
# and the waiter are new processes that read it (dies after 30 s).  $count
# is how many workers the config gives, when not as many as now.
sub reload_serve {
	my ($text, $count) = @_;
	my $m = master_pid();
	my @old = worker_pids($m);
	my $waiter = waiter_pid($m);
	conf_write($text);
	kill 'HUP', $m or croak "HUP $m: $!";
	wait_workers($m, $count // scalar @old, 30, \@old) or croak "no new workers after HUP\n";
	return 1 unless $waiter;
	wait_until(30, sub { my $w = waiter_pid($m); $w && $w != $waiter })
		or croak "no new waiter after HUP\n";
	return 1;
}

# reload_serve($text, $count), then `sluice work` restarted on it (it
# reads its config at start only); returns once /health answers (dies
# otherwise).
sub reload_stack {
	my ($text, $count) = @_;
	reload_serve($text, $count);
	for my $cmd (qw(work-stop work-start)) {
		my $r = dev($cmd);
		croak "scripts/dev $cmd: $r->{out}$r->{err}" if $r->{exit};
	}
	wait_until(30, sub { http(GET => '/health')->{status} == 200 })
		or croak 'no health after the reload';
	return 1;
}

# $text with "key = value" set for each pair (replacing an existing line,
# else appended); an undef value removes the key.
sub conf_with {
	my ($text, @kv) = @_;
	while (my ($k, $v) = splice @kv, 0, 2) {
		my $re = qr/^[ \t]*\Q$k\E[ \t]*=.*(?:\n|\z)/m;
		if (defined $v) {
			$text .= "\n" if length $text && $text !~ /\n\z/;
			$text =~ s/$re//g;
			$text .= "$k = $v\n";
		} else {
			$text =~ s/$re//g;
		}
	}
	return $text;
}

1;
