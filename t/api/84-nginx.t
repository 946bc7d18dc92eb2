#!/usr/bin/perl
# nginx in front: bodies limited per location (JSON routes at
# body_max_bytes, refused before a byte of a larger body is read; only the
# upload locations take more), request-rate and connection limits per
# client address (429 with Retry-After), Mozilla's intermediate TLS profile
# (no CBC, SHA-1, CAMELLIA or ARIA suites), and HSTS, nosniff and no-store
# on every answer, nginx's own and downloads included.  The shipped
# production site passes `nginx -t`.  The test stack exempts 127.0.0.1 from
# the rate limits; the clients here use other loopback addresses.

use strict;
use warnings;

use File::Temp qw(tempdir);
use IO::Socket::SSL qw(SSL_VERIFY_NONE);
use Test::More;
use Time::HiRes qw(time);

use SluiceTest;

my ($host, $port) = env('SLUICE_URL') =~ m{^https://([^/:]+):(\d+)} or die;
my $net = sprintf '127.%d.%d', 1 + $$ % 250, 1 + int(time / 7) % 250;
my $limit = (conf_read() =~ /^[ \t]*body_max_bytes[ \t]*=[ \t]*(\d+)/m)[0] // 1048576;
my $tok = token(customer => 'demo', permissions => [qw(PLATFORM.READ PLATFORM.WRITE
	STORAGE_EXPLORER.READ STORAGE_EXPLORER.WRITE)]);

sub tls {
	my (%o) = @_;
	return IO::Socket::SSL->new(PeerHost => $host, PeerPort => $port,
		SSL_verify_mode => SSL_VERIFY_NONE, Timeout => 10,
		(defined $o{from} ? (LocalAddr => $o{from}) : ()),
		(defined $o{version} ? (SSL_version => $o{version}) : ()),
		(defined $o{cipher} ? (SSL_cipher_list => $o{cipher}) : ()));
}

# Read one response (status, headers, body by Content-Length) from $s;
# bytes of the responses after it stay for the next call.
my %pending;
sub read_response {
	my ($s) = @_;
	my $buf = delete $pending{$s} // '';
	local $SIG{ALRM} = sub { die "timeout\n" };
	alarm 20;
	my ($head, $rest);
	until (($head, $rest) = $buf =~ /\A(.*?)\r\n\r\n(.*)\z/s) {
		my $n = sysread($s, $buf, 65536, length $buf);
		die "closed\n" unless $n;
	}
	my ($status) = $head =~ m{^HTTP/1\.\d (\d{3})} or die "bad status line\n";
	my %h;
	while ($head =~ /^([^:\r\n]+):[ \t]*(.*?)\r?$/mg) {
		push @{ $h{ lc $1 } }, $2;
	}
	my $len = $h{'content-length'} ? $h{'content-length'}[0] : 0;
	while (length $rest < $len) {
		my $n = sysread($s, $rest, 65536, length $rest);
		die "closed\n" unless $n;
	}
	alarm 0;
	$pending{$s} = substr($rest, $len);
	return { status => $status, headers => \%h, content => substr($rest, 0, $len) };
}

# --- bodies ---------------------------------------------------------------------
# 100 MB announced, not one byte of it sent, no credentials: nginx answers
# at once from the headers.
{
	my $s = tls();
	my $t0 = time;
	print {$s} "POST /platform/pipeline HTTP/1.1\r\nHost: $host\r\nContent-Type: application/json\r\n"
	    . "Content-Length: 100000000\r\nConnection: close\r\n\r\n";
	my $res = read_response($s);
	is($res->{status}, 413, 'a 100 MB unauthenticated POST is refused before its body');
	is($res->{content}, qq({"detail":"Request body too large (limit $limit bytes)"}),
	   'in the API\'s shape, with the limit');
	is_deeply($res->{headers}{'content-type'}, [ 'application/json' ], 'as JSON');
	close $s;
}
# The limit itself passes nginx (the app then answers), one byte more does not.
my $at = '"' . ('a' x ($limit - 2)) . '"';
is(http(POST => '/_test/echo', { token => $tok, body => $at, content_type => 'application/json',
	timeout => 60 })->{status}, 200, "a $limit-byte body reaches the app");
my $res = http(POST => '/_test/echo', { body => $at . ' ', content_type => 'application/json',
	timeout => 60 });
is($res->{status}, 413, 'one byte more: 413 (nginx, no token needed to learn it)');
# A chunked body is counted as it arrives.
{
	my $s = tls();
	print {$s} "POST /platform/pipeline HTTP/1.1\r\nHost: $host\r\nTransfer-Encoding: chunked\r\n"
	    . "Content-Type: application/json\r\nConnection: close\r\n\r\n";
	my $chunk = 'x' x 65536;
	eval {
		local $SIG{PIPE} = 'IGNORE';
		for (1 .. ($limit / 65536) + 2) {
			printf {$s} "%x\r\n%s\r\n", length $chunk, $chunk or last;
		}
		print {$s} "0\r\n\r\n";
	};
	is(read_response($s)->{status}, 413, 'a chunked body over the limit: 413');
	close $s;
}
# Only the upload locations take more.
my $big = "id,v\n" . join('', map { "$_,value-$_\n" } 1 .. 200000);
ok(length $big > 2 * $limit, 'a CSV of more than twice body_max_bytes');
my $boundary = 'b84';
my $multipart = "--$boundary\r\nContent-Disposition: form-data; name=\"file\"; "
    . "filename=\"big.csv\"\r\nContent-Type: text/csv\r\n\r\n$big\r\n--$boundary--\r\n";
$res = http(POST => '/storage-explorer/storage/upload?folder_path=t84', { token => $tok,
	body => $multipart, content_type => "multipart/form-data; boundary=$boundary", timeout => 120 });
is($res->{status}, 201, 'the storage upload location takes it') or diag describe($res);
$res = http(POST => '/dataset/00000000-0000-4000-8000-000000000084/documents', {
	basic => env('SLUICE_DEMO_BASIC'), body => $multipart,
	content_type => "multipart/form-data; boundary=$boundary", timeout => 120 });
is($res->{status}, 404, 'the retrieval documents location passes it to the app (unknown dataset: 404)')
	or diag describe($res);
{
	my $s = tls();
	print {$s} "POST /dataset/x/documents HTTP/1.1\r\nHost: $host\r\n"
	    . "Content-Type: multipart/form-data; boundary=x\r\nContent-Length: 67108865\r\n"
	    . "Connection: close\r\n\r\n";
	my $r = read_response($s);
	is($r->{status}, 413, 'documents: one byte over 64 MiB is refused before its body');
	like($r->{content}, qr/limit 67108864 bytes/, '... saying the limit');
	close $s;
}

# --- headers on every answer ------------------------------------------------------
sub security_headers_ok {
	my ($r, $name) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my $h = sub { my $v = $r->{headers}{ $_[0] }; ref $v ? join(', ', @$v) : $v };
	is($h->('strict-transport-security'), 'max-age=63072000', "$name: HSTS");
	is($h->('x-content-type-options'), 'nosniff', "$name: nosniff");
	is($h->('cache-control'), 'no-store', "$name: Cache-Control no-store, once");
}
security_headers_ok(http(GET => '/health'), 'an app 200');
security_headers_ok(http(GET => '/platform/nothing-here', { token => $tok }), 'an app 404');
security_headers_ok(http(GET => '/platform/pipelines'), 'an app 401');
security_headers_ok($res = http(POST => '/_test/echo', { body => $at . ' ',
	content_type => 'application/json', timeout => 60 }), 'nginx\'s 413');
$res = http(GET => '/storage-explorer/storage/download?file_path=t84/big.csv', { token => $tok,
	timeout => 60 });
is($res->{status}, 200, 'a download through X-Accel-Redirect');
is(length $res->{content}, length $big, 'the whole file');
security_headers_ok($res, 'a download');

# --- request rate -------------------------------------------------------------------
# 300 requests pipelined on one connection from one address: past the burst
# nginx answers 429 at once, in the API's shape.
{
	my $s = tls(from => "$net.84");
	print {$s} "GET /health HTTP/1.1\r\nHost: $host\r\n\r\n" x 299,
		"GET /health HTTP/1.1\r\nHost: $host\r\nConnection: close\r\n\r\n";
	my (%n, $limited);
	for (1 .. 300) {
		my $r = eval { read_response($s) } or last;
		$n{ $r->{status} }++;
		$limited //= $r if $r->{status} == 429;
	}
	close $s;
	ok(($n{200} // 0) >= 120, 'the burst is served') or diag explain \%n;
	ok(($n{429} // 0) > 0, 'then 429') or diag explain \%n;
	if ($limited) {
		is($limited->{content}, '{"detail":"Too many requests"}', '429 body');
		is_deeply($limited->{headers}{'retry-after'}, [ 1 ], '429 Retry-After');
		security_headers_ok($limited, 'nginx\'s 429');
	}
}
# The test stack exempts 127.0.0.1 (the suite and the benchmarks).
{
	my $s = tls();
	print {$s} "GET /health HTTP/1.1\r\nHost: $host\r\n\r\n" x 299,
		"GET /health HTTP/1.1\r\nHost: $host\r\nConnection: close\r\n\r\n";
	my %n;
	for (1 .. 300) {
		my $r = eval { read_response($s) } or last;
		$n{ $r->{status} }++;
	}
	close $s;
	is_deeply(\%n, { 200 => 300 }, '127.0.0.1 is not limited on the test stack');
}

# --- connections ---------------------------------------------------------------------
# 32 requests at once from one address are served; the 33rd is refused.
{
	my @held;
	for (1 .. 32) {
		my $s = tls(from => "$net.85") or last;
		print {$s} "POST /platform/pipeline HTTP/1.1\r\nHost: $host\r\n"
		    . "Content-Type: application/json\r\nContent-Length: 10\r\n\r\n";
		push @held, $s;
	}
	is(scalar @held, 32, '32 requests in progress (bodies not sent)');
	my $s = tls(from => "$net.85");
	print {$s} "GET /health HTTP/1.1\r\nHost: $host\r\nConnection: close\r\n\r\n";
	my $r = read_response($s);
	is($r->{status}, 429, 'the 33rd at once from that address: 429');
	close $_ for @held, $s;
	ok(wait_until(10, sub { http(GET => '/health', { from => "$net.85" })->{status} == 200 }),
	   'served again once they are done');
}

# --- TLS ------------------------------------------------------------------------------
for my $c (qw(ECDHE-ECDSA-AES128-SHA ECDHE-ECDSA-AES256-SHA ECDHE-ECDSA-AES128-SHA256
	      ECDHE-ECDSA-AES256-SHA384 ECDHE-ECDSA-CAMELLIA128-SHA256
	      ECDHE-ECDSA-ARIA128-GCM-SHA256 ECDHE-ECDSA-ARIA256-GCM-SHA384)) {
	ok(!tls(version => 'TLSv1_2', cipher => "$c:\@SECLEVEL=0"), "TLS 1.2 with $c: refused");
}
for my $c (qw(ECDHE-ECDSA-AES128-GCM-SHA256 ECDHE-ECDSA-AES256-GCM-SHA384
	      ECDHE-ECDSA-CHACHA20-POLY1305)) {
	my $s = tls(version => 'TLSv1_2', cipher => $c);
	ok($s && $s->get_cipher eq $c, "TLS 1.2 with $c: accepted");
}
my $s13 = tls(version => 'TLSv1_3');
ok($s13 && $s13->get_sslversion eq 'TLSv1_3', 'TLS 1.3: accepted');
ok(!tls(version => 'TLSv1_1', cipher => 'DEFAULT:@SECLEVEL=0'), 'TLS 1.1: refused');

# --- the production site ------------------------------------------------------------
{
	my $dir = tempdir(CLEANUP => 1);
	my $var = env('SLUICE_VAR');
	open my $in, '<', env('SLUICE_ROOT') . '/nginx/sluice.conf' or die;
	local $/;
	my $site = <$in>;
	$site =~ s{/etc/ssl/certs/sluice\.pem}{$var/tls/cert.pem};
	$site =~ s{/etc/ssl/private/sluice\.key}{$var/tls/key.pem};
	$site =~ s{/var/log/nginx/}{$dir/}g;
	open my $out, '>', "$dir/site.conf" or die;
	print {$out} $site;
	close $out;
	open $out, '>', "$dir/nginx.conf" or die;
	print {$out} "pid $dir/nginx.pid;\nevents {}\nhttp {\ninclude /etc/nginx/mime.types;\n"
	    . "include $dir/site.conf;\n}\n";
	close $out;
	my $r = run_cmd([ 'nginx', '-t', '-p', "$dir/", '-c', "$dir/nginx.conf", '-e', "$dir/error.log" ]);
	is($r->{exit}, 0, 'nginx/sluice.conf passes nginx -t') or diag $r->{err};
}

system('rm', '-rf', env('SLUICE_VAR') . "/storage/customers/" . env('SLUICE_DEMO_CUSTOMER_ID') . '/t84');
done_testing();
