#!/usr/bin/perl
# Webhooks of a pipeline: create (the secret shown once), list, get, delete;
# URLs refused (not https, user info, fragment, too long, loopback, private,
# link-local, a name resolving to loopback) while webhook_allow_private is
# off; another customer's pipeline, webhook and delivery answer 404.  Then,
# with webhook_allow_private on and webhook_ca_file naming a test CA, a
# local HTTPS receiver that verifies every Standard Webhooks signature and
# timestamp: a run's event delivered; 500 then 200 retried under the same
# webhook-id; a receiver down, FAILED after webhook_max_attempts; a slow
# receiver timed out while another pipeline's delivery goes through; a 302
# never followed; redelivery (same id, new timestamp and signature); kill -9
# of sluice work during an attempt (delivered after the restart); a queued
# run cancelled while work is stopped (recorded with the cancel, sent after);
# a FAILED run's event; a deleted webhook gets no more attempts; no secret
# in a log line.

use strict;
use warnings;

use Digest::SHA qw(hmac_sha256_base64);
use File::Temp qw(tempdir);
use IO::Select;
use IO::Socket::INET;
use IO::Socket::SSL;
use MIME::Base64 qw(decode_base64);
use POSIX ();
use Test::More;
use Time::HiRes ();

use SluiceTest;
use RunnerFixture;

my $token = env('SLUICE_DEMO_TOKEN');
my $orig = conf_read();
my $dir = tempdir(CLEANUP => 1);
chmod 0755, $dir;
my (@secrets, @receivers);

END {
	local ($?, $@);
	kill 'KILL', $_->{pid} for @receivers;
	eval { reload_serve($orig) if conf_read() ne $orig; 1 }
		or print STDERR "# restoring the serve config failed: $@";
}

my $r = run_cmd([ env('SLUICE_BIN'), 'customer', 'add', 'hooks-other',
		  '--if-missing', '-c', env('SLUICE_CONF') ]);
is($r->{exit}, 0, 'second customer exists') or diag $r->{err};
my $other = token(customer => 'hooks-other', sub => 'o@example.com',
		  permissions => 'PLATFORM.READ,PLATFORM.WRITE');

sub hooks { "/platform/pipeline/$_[0]/webhooks" . (defined $_[1] ? "/$_[1]" : '') }

sub create_hook {
	my ($pid, $url, %o) = @_;
	return http(POST => hooks($pid), { token => $o{token} // $token,
		json => { url => $url, %{ $o{extra} || {} } } });
}

sub deliveries {
	my ($pid, $hid) = @_;
	my $res = http(GET => hooks($pid, $hid) . '/deliveries', { token => $token });
	return $res->{status} == 200 ? $res->{json}{deliveries} : undef;
}

# The single delivery of a webhook once its status is $status.
sub wait_delivery {
	my ($pid, $hid, $status, $timeout) = @_;
	my $d;
	wait_until($timeout // 30, sub {
		my $l = deliveries($pid, $hid);
		$d = $l && $l->[0];
		$d && $d->{status} eq $status;
	}, 0.2) or return undef;
	return $d;
}

# --- CRUD and validation, webhook_allow_private off ----------------------------------------

my $p = make_pipeline(name => 'hooks-crud');
my $pid = $p->{pipeline_id};

my $c = create_hook($pid, 'https://93.184.216.34/hook?x=1', extra => { description => 'ops' });
is($c->{status}, 201, 'POST webhooks: 201') or diag describe($c);
my $h = $c->{json};
like($h->{webhook_id}, qr/^[0-9a-f]{32}$/, 'webhook_id is 32 lowercase hex');
is($h->{pipeline_id}, $pid, 'pipeline_id');
is($h->{url}, 'https://93.184.216.34/hook?x=1', 'url as given');
is($h->{description}, 'ops', 'description');
is_deeply($h->{events}, [ 'pipeline_run.finished' ], 'events');
iso_time_ok($h->{created_at}, 'created_at', 60);
like($h->{secret}, qr{^whsec_[A-Za-z0-9+/]{43}=$}, 'secret: whsec_ and the base64 of 32 bytes');
is(length decode_base64(substr $h->{secret}, 6), 32, 'the secret decodes to 32 bytes');
push @secrets, $h->{secret};
my $stored = mysql("SELECT HEX(secret_enc) FROM webhooks WHERE id = '$h->{webhook_id}'");
is(length($stored) / 2, length($h->{secret}) + 28,
   'stored: the secret sealed (nonce and tag added)');
unlike($stored, qr/\Q${\ uc unpack('H*', $h->{secret})}\E/, 'stored: not the secret itself');

my $g = http(GET => hooks($pid, $h->{webhook_id}), { token => $token });
is($g->{status}, 200, 'GET one: 200');
my %want = %$h;
delete $want{secret};
is_deeply($g->{json}, \%want, 'GET one: the object without its secret');
my $l = http(GET => hooks($pid), { token => $token });
is_deeply($l->{json}, [ \%want ], 'GET list: the one webhook, no secret');
unlike($g->{content} . $l->{content}, qr/whsec_/, 'no secret in GET answers');

my $c2 = create_hook($pid, 'https://93.184.216.35/');
is($c2->{json}{description}, undef, 'description absent: null');
$l = http(GET => hooks($pid), { token => $token });
is_deeply([ map { $_->{webhook_id} } @{ $l->{json} } ],
	  [ $h->{webhook_id}, $c2->{json}{webhook_id} ], 'list ordered by created_at');

for my $case (
	[ 'http://93.184.216.34/', qr/https/, 'http://' ],
	[ 'ftp://93.184.216.34/', qr/https/, 'ftp://' ],
	[ 'https://user:pw@93.184.216.34/', qr/user info/, 'user info' ],
	[ 'https://user@93.184.216.34/', qr/user info/, 'a user name alone' ],
	[ 'https://93.184.216.34/#frag', qr/fragment/, 'a fragment' ],
	[ 'not a url', qr/valid URL/, 'not a URL' ],
	[ 'https://', qr/valid URL/, 'no host' ],
	[ 'https://93.184.216.34/' . ('a' x 2027), qr/url/, '2049 bytes' ],
	[ 'https://127.0.0.1/hook', qr/^url must not point at a loopback, private or link-local address$/, '127.0.0.1' ],
	[ 'https://10.0.0.1/hook', qr/^url must not point at a loopback, private or link-local address$/, '10.0.0.1' ],
	[ 'https://192.168.1.10/hook', qr/loopback, private/, '192.168.1.10' ],
	[ 'https://169.254.169.254/latest', qr/loopback, private/, '169.254.169.254 (link-local)' ],
	[ 'https://[::1]/hook', qr/loopback, private/, '[::1]' ],
	[ 'https://[fe80::1]/hook', qr/loopback, private/, '[fe80::1]' ],
	[ 'https://[::ffff:127.0.0.1]/hook', qr/loopback, private/, 'IPv4-mapped loopback' ],
	[ 'https://localhost/hook', qr/loopback, private/, 'localhost (resolves to loopback)' ],
	[ 'https://0x7f000001/hook', qr/loopback, private/, '0x7f000001' ],
) {
	my ($url, $re, $what) = @$case;
	my $res = create_hook($pid, $url);
	is($res->{status}, 400, "url $what: 400") or diag describe($res);
	like($res->{json}{detail} // '', $re, "url $what: says why");
}
is(length('https://93.184.216.34/' . ('a' x 2026)), 2048, 'the longest URL is 2048 bytes');
is(create_hook($pid, 'https://93.184.216.34/' . ('a' x 2026))->{status}, 201, 'a URL of 2048 bytes is taken');
for my $case (
	[ {}, qr/url/, 'url missing' ],
	[ { url => 5 }, qr/url/, 'url not a string' ],
	[ { url => 'https://93.184.216.34/', colour => 1 }, qr/colour/, 'an unknown field' ],
	[ { url => 'https://93.184.216.34/', description => 'd' x 256 }, qr/description/, 'description of 256 bytes' ],
) {
	my ($body, $re, $what) = @$case;
	my $res = http(POST => hooks($pid), { token => $token, json => $body });
	is($res->{status}, 400, "$what: 400");
	like($res->{json}{detail} // '', $re, "$what: named");
}
my $q = http(GET => hooks($pid) . '?x=1', { token => $token });
is($q->{status}, 400, 'a query parameter on the list: 400');
like($q->{json}{detail} // '', qr/\bx\b/, 'it is named');

# 404s: the pipeline 404 body is GET /platform/pipeline/{id}'s.
my $gone = '00000000_0000_4000_8000_000000000000';
my $pget = http(GET => "/platform/pipeline/$gone", { token => $token });
is($pget->{status}, 404, 'GET of an unknown pipeline: 404');
for my $res (
	[ create_hook($gone, 'https://93.184.216.34/'), 'POST on an unknown pipeline' ],
	[ http(GET => hooks($gone), { token => $token }), 'GET list of an unknown pipeline' ],
	[ http(GET => hooks('nonsense'), { token => $token }), 'a malformed pipeline id' ],
	[ create_hook($pid, 'https://93.184.216.34/', token => $other), 'POST on another customer\'s pipeline' ],
	[ http(GET => hooks($pid), { token => $other }), 'GET list of another customer\'s pipeline' ],
	[ http(GET => hooks($pid, $h->{webhook_id}), { token => $other }), 'GET of another customer\'s webhook' ],
	[ http(DELETE => hooks($pid, $h->{webhook_id}), { token => $other }), 'DELETE of another customer\'s webhook' ],
	[ http(GET => hooks($pid, $h->{webhook_id}) . '/deliveries', { token => $other }), 'deliveries of another customer\'s webhook' ],
) {
	is($res->[0]{status}, 404, "$res->[1]: 404");
	is_deeply($res->[0]{json}, $pget->{json}, "$res->[1]: the pipeline's 404 body");
}
my $op = make_pipeline(name => 'hooks-other', token => $other);
my $oh = create_hook($op->{pipeline_id}, 'https://93.184.216.34/', token => $other);
is($oh->{status}, 201, 'the other customer has a webhook of its own');
for my $res (
	[ http(GET => hooks($pid, $oh->{json}{webhook_id}), { token => $token }), 'another customer\'s webhook under my pipeline' ],
	[ http(GET => hooks($pid, 'f' x 32), { token => $token }), 'an unknown webhook id' ],
	[ http(GET => hooks($pid, 'F' x 32), { token => $token }), 'an upper-case webhook id' ],
	[ http(DELETE => hooks($pid, 'f' x 32), { token => $token }), 'DELETE of an unknown webhook' ],
	[ http(GET => hooks($pid, 'f' x 32) . '/deliveries', { token => $token }), 'deliveries of an unknown webhook' ],
) {
	json_response_is($res->[0], 404, { detail => 'Webhook not found' }, "$res->[1]: 404 Webhook not found");
}
json_response_is(http(POST => hooks($pid, $h->{webhook_id}) . '/deliveries/msg_' . ('0' x 32) . '/redeliver',
	{ token => $token }), 404, { detail => 'Delivery not found' }, 'redeliver of an unknown delivery: 404');
json_response_is(http(POST => hooks($pid, $h->{webhook_id}) . '/deliveries/' . ('0' x 32) . '/redeliver',
	{ token => $token }), 404, { detail => 'Delivery not found' }, 'redeliver of a malformed delivery id: 404');
is(http(GET => hooks($pid, $h->{webhook_id}) . '/deliveries?limit=0', { token => $token })->{status}, 400, 'limit=0: 400');
is(http(GET => hooks($pid, $h->{webhook_id}) . '/deliveries?limit=101', { token => $token })->{status}, 400, 'limit=101: 400');
is(http(GET => hooks($pid, $h->{webhook_id}) . '/deliveries?page=0', { token => $token })->{status}, 400, 'page=0: 400');
my $empty = http(GET => hooks($pid, $h->{webhook_id}) . '/deliveries', { token => $token });
is_deeply($empty->{json}{deliveries}, [], 'no deliveries yet');
is($empty->{json}{pagination}{total_items}, 0, 'pagination: total_items 0');

# At most 10 per pipeline: 3 made, 7 more, then 409.
for (1 .. 7) { create_hook($pid, "https://93.184.216.34/$_")->{status} == 201 or fail("webhook $_") }
json_response_is(create_hook($pid, 'https://93.184.216.34/11'), 409,
	{ detail => 'A pipeline has at most 10 webhooks' }, 'the 11th webhook: 409');

my $del = http(DELETE => hooks($pid, $h->{webhook_id}), { token => $token });
json_response_is($del, 200, { webhook_id => $h->{webhook_id}, status => 'WEBHOOK_DELETED' }, 'DELETE: 200');
json_response_is(http(GET => hooks($pid, $h->{webhook_id}), { token => $token }), 404,
	{ detail => 'Webhook not found' }, 'GET after DELETE: 404');
is(create_hook($pid, 'https://93.184.216.34/again')->{status}, 201, 'room for one again after a DELETE');
my $deleted_pipe = http(DELETE => "/platform/pipeline/$pid", { token => $token,
	headers => { customer_name => 'demo' } });
is($deleted_pipe->{status}, 200, 'the pipeline with webhooks can be deleted');
is(scalar mysql("SELECT COUNT(*) FROM webhooks WHERE pipeline_id = '$pid'"), 0, 'its webhooks went with it');

# --- a test CA and a local HTTPS receiver ---------------------------------------------------

sub ossl {
	my $res = run_cmd([ 'openssl', @_ ]);
	die "openssl @_: $res->{err}" if $res->{exit};
}
ossl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', '/CN=sluice test CA',
     '-keyout', "$dir/ca.key", '-out', "$dir/ca.pem");
ossl('req', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=127.0.0.1',
     '-keyout', "$dir/hook.key", '-out', "$dir/hook.csr");
open my $ext, '>', "$dir/ext.cnf" or die;
print {$ext} "subjectAltName = IP:127.0.0.1\n";
close $ext;
ossl('x509', '-req', '-in', "$dir/hook.csr", '-CA', "$dir/ca.pem", '-CAkey', "$dir/ca.key",
     '-CAcreateserial', '-days', '2', '-extfile', "$dir/ext.cnf", '-out', "$dir/hook.pem");
chmod 0644, "$dir/ca.pem";

my $rseq = 0;

# A receiver in a forked child.  plan: what to answer, one entry per
# request, the last repeated: a status (302 adds a Location), or 'hold'
# (no answer until the client hangs up, at most 60 s).  Each request is a
# line of its log file: path, the three headers, the body, whether the
# signature verifies with the secret in its secret file and whether the
# timestamp is within 5 minutes of now.
sub start_receiver {
	my (@plan) = @_;
	my $n = ++$rseq;
	my %rc = (log => "$dir/recv$n.log", secret => "$dir/recv$n.secret");
	my $srv = IO::Socket::SSL->new(LocalAddr => '127.0.0.1', LocalPort => 0,
		Listen => 16, ReuseAddr => 1, SSL_server => 1,
		SSL_cert_file => "$dir/hook.pem", SSL_key_file => "$dir/hook.key")
		or die "receiver: $SSL_ERROR";
	$rc{port} = $srv->sockport;
	$rc{url} = "https://127.0.0.1:$rc{port}/hook$n";
	my $pid = fork // die "fork: $!";
	if (!$pid) {
		my $i = 0;
		while (1) {
			my $cl = $srv->accept or next;
			my $what = $plan[$i < @plan ? $i : $#plan];
			$i++;
			serve_one($cl, $what, \%rc);
			close $cl;
		}
		POSIX::_exit(0);
	}
	close $srv;
	$rc{pid} = $pid;
	push @receivers, \%rc;
	return \%rc;
}

sub serve_one {
	my ($cl, $what, $rc) = @_;
	my $buf = '';
	my $sel = IO::Select->new($cl);
	while ($buf !~ /\r\n\r\n/) {
		last unless $sel->can_read(10);
		my $got = sysread($cl, $buf, 65536, length $buf);
		last unless $got;
	}
	my ($head, $body) = split /\r\n\r\n/, $buf, 2;
	$body //= '';
	my ($method, $path) = $head =~ /^(\S+) (\S+)/;
	my %hd;
	for (split /\r\n/, $head) { $hd{lc $1} = $2 if /^([^:]+):\s*(.*)$/ }
	my $len = $hd{'content-length'} // 0;
	while (length $body < $len) {
		last unless $sel->can_read(10);
		my $got = sysread($cl, $body, $len - length $body, length $body);
		last unless $got;
	}
	my $secret = '';
	if (open my $fh, '<', $rc->{secret}) { $secret = <$fh> // ''; chomp $secret }
	my ($id, $ts, $sig) = map { $hd{$_} // '' } qw(webhook-id webhook-timestamp webhook-signature);
	my $key = decode_base64($secret =~ s/^whsec_//r);
	my $mac = hmac_sha256_base64("$id.$ts.$body", $key);
	$mac .= '=' x ((4 - length($mac) % 4) % 4);
	my %rec = (method => $method, path => $path, id => $id, ts => $ts, sig => $sig,
		   body => $body, type => $hd{'content-type'} // '',
		   sig_ok => ($sig eq "v1,$mac" ? 1 : 0),
		   ts_ok => ($ts =~ /^\d+$/ && abs(time - $ts) <= 300 ? 1 : 0), what => "$what");
	open my $log, '>>', $rc->{log} or die;
	print {$log} json_encode(\%rec), "\n";
	close $log;
	if ($what eq 'hold') {
		# until the client gives up (EOF), bounded
		$sel->can_read(60) and sysread($cl, my $x, 1);
		return;
	}
	my $loc = $what == 302 ? "Location: https://127.0.0.1:$rc->{port}/elsewhere\r\n" : '';
	print {$cl} "HTTP/1.1 $what X\r\n${loc}Content-Length: 2\r\nConnection: close\r\n\r\nok";
}

sub received {
	my ($rc) = @_;
	open my $fh, '<', $rc->{log} or return wantarray ? () : 0;
	return map { json_decode($_) } grep { /\S/ } <$fh>;
}

sub hook_for {
	my ($pipe, $rc) = @_;
	my $res = create_hook($pipe, $rc->{url});
	die 'POST webhook: ' . describe($res) unless $res->{status} == 201;
	push @secrets, $res->{json}{secret};
	open my $fh, '>', $rc->{secret} or die;
	print {$fh} $res->{json}{secret}, "\n";
	close $fh;
	return $res->{json};
}

# A port with nothing listening.
sub closed_port {
	my $s = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => 0, Listen => 1) or die;
	my $port = $s->sockport;
	close $s;
	return $port;
}

# --- deliveries, webhook_allow_private on ----------------------------------------------------

with_work_conf(webhook_allow_private => 'on', webhook_ca_file => "$dir/ca.pem",
	       webhook_timeout_s => 3, webhook_max_attempts => 3, webhook_retry_base_s => 1);
reload_serve(conf_read());
pass('serve and work run with webhook_allow_private = on and the test CA');

# A successful delivery.
my $rok = start_receiver(200);
my $pok = make_pipeline(name => 'hooks-ok', jobs => [ tap_job(config => { generate => 4 }) ]);
my $hok = hook_for($pok->{pipeline_id}, $rok);
my $run = execute_run($pok->{pipeline_id});
my $row = wait_run($run, 60);
is($row && $row->{status}, 'SUCCESS', 'the run succeeded');
my $d = wait_delivery($pok->{pipeline_id}, $hok->{webhook_id}, 'SUCCEEDED');
ok($d, 'the delivery SUCCEEDED') or diag explain deliveries($pok->{pipeline_id}, $hok->{webhook_id});
like($d->{delivery_id}, qr/^msg_[0-9a-f]{32}$/, 'delivery_id msg_<32 hex>');
is($d->{event_type}, 'pipeline_run.finished', 'event_type');
is($d->{run_id}, $run, 'run_id');
is($d->{attempts}, 1, 'one attempt');
is($d->{response_status}, 200, 'response_status 200');
is($d->{error}, undef, 'no error');
is($d->{next_attempt_at}, undef, 'next_attempt_at null once settled');
iso_time_ok($d->{delivered_at}, 'delivered_at', 60);
iso_time_ok($d->{last_attempt_at}, 'last_attempt_at', 60);
iso_time_ok($d->{created_at}, 'created_at', 60);
my @got = received($rok);
is(scalar @got, 1, 'the receiver got one request');
is($got[0]{method}, 'POST', 'a POST');
is($got[0]{path}, "/hook1", 'to the URL\'s path');
like($got[0]{type}, qr{^application/json}, 'Content-Type application/json');
is($got[0]{id}, $d->{delivery_id}, 'webhook-id is the delivery_id');
ok($got[0]{sig_ok}, 'the signature verifies with the secret') or diag explain $got[0];
ok($got[0]{ts_ok}, 'the timestamp is recent');
my $ev = json_decode($got[0]{body});
is($ev->{type}, 'pipeline_run.finished', 'event type');
my $rr = run_row($run);
is_deeply([ sort keys %{ $ev->{data} } ], [ sort qw(run_id pipeline_id status trigger attempt
	rows_loaded queued_at started_at finished_at duration_ms error) ], 'event data fields');
is($ev->{data}{run_id}, $run, 'data.run_id');
is($ev->{data}{pipeline_id}, $pok->{pipeline_id}, 'data.pipeline_id');
is($ev->{data}{status}, 'SUCCESS', 'data.status');
is($ev->{data}{trigger}, 'manual', 'data.trigger');
is($ev->{data}{attempt}, 1, 'data.attempt');
is($ev->{data}{rows_loaded}, 4, 'data.rows_loaded');
is($ev->{data}{error}, undef, 'data.error null');
is($ev->{timestamp}, $ev->{data}{finished_at}, 'timestamp is when the run ended');
iso_time_ok($ev->{data}{$_}, "data.$_", 120) for qw(queued_at started_at finished_at);
ok($ev->{data}{duration_ms} >= 0, 'data.duration_ms');
my $pg = http(GET => hooks($pok->{pipeline_id}, $hok->{webhook_id}) . '/deliveries?limit=1', { token => $token });
is($pg->{json}{pagination}{total_items}, 1, 'pagination: total_items');
is($pg->{json}{pagination}{items_per_page}, 1, 'pagination: items_per_page');

# Redelivery: same id, a new timestamp and signature.
wait_until(5, sub { time > $got[0]{ts} }, 0.1);
my $rd = http(POST => hooks($pok->{pipeline_id}, $hok->{webhook_id}) . "/deliveries/$d->{delivery_id}/redeliver",
	      { token => $token });
is($rd->{status}, 202, 'redeliver: 202');
is($rd->{json}{delivery_id}, $d->{delivery_id}, 'the same delivery');
is($rd->{json}{status}, 'PENDING', 'back to PENDING');
is($rd->{json}{attempts}, 0, 'attempts reset to 0');
ok(defined $rd->{json}{next_attempt_at}, 'due (next_attempt_at set)');
$d = wait_delivery($pok->{pipeline_id}, $hok->{webhook_id}, 'SUCCEEDED');
ok($d && $d->{attempts} == 1, 'redelivered: SUCCEEDED after one attempt');
@got = received($rok);
is(scalar @got, 2, 'the receiver got it again');
is($got[1]{id}, $got[0]{id}, 'the same webhook-id');
is($got[1]{body}, $got[0]{body}, 'the same body');
ok($got[1]{ts} > $got[0]{ts}, 'a new timestamp');
isnt($got[1]{sig}, $got[0]{sig}, 'a new signature');
ok($got[1]{sig_ok} && $got[1]{ts_ok}, 'which verifies');
is(http(POST => hooks($pok->{pipeline_id}, $hok->{webhook_id}) . "/deliveries/$d->{delivery_id}/redeliver",
	{ token => $other })->{status}, 404, 'another customer cannot redeliver it');

# A FAILED run is told too, with its error.
my $rfail = start_receiver(200);
my $pfail = make_pipeline(name => 'hooks-failed', jobs => [ tap_job(config => { fail_after => 0 }) ]);
my $hfail = hook_for($pfail->{pipeline_id}, $rfail);
my $frun = execute_run($pfail->{pipeline_id});
is(wait_run($frun, 60)->{status}, 'FAILED', 'a run that fails');
$d = wait_delivery($pfail->{pipeline_id}, $hfail->{webhook_id}, 'SUCCEEDED');
ok($d, 'its delivery SUCCEEDED');
@got = received($rfail);
$ev = @got ? json_decode($got[0]{body}) : {};
is($ev->{data}{run_id}, $frun, 'the failed run\'s event');
is($ev->{data}{status}, 'FAILED', 'data.status FAILED');
is($ev->{data}{error}, run_row($frun)->{error}, 'data.error is the run\'s error');
ok(length($ev->{data}{error} // ''), 'which is a string');

# 500, then 200: retried under the same webhook-id.
my $r500 = start_receiver(500, 200);
my $p500 = make_pipeline(name => 'hooks-500');
my $h500 = hook_for($p500->{pipeline_id}, $r500);
wait_run(execute_run($p500->{pipeline_id}), 60);
$d = wait_delivery($p500->{pipeline_id}, $h500->{webhook_id}, 'SUCCEEDED');
ok($d, '500 then 200: SUCCEEDED');
is($d && $d->{attempts}, 2, 'after two attempts');
@got = received($r500);
is(scalar @got, 2, 'two requests');
is($got[0]{id}, $got[1]{id}, 'the same webhook-id on both');
ok($got[0]{sig_ok} && $got[1]{sig_ok}, 'both signed');

# The receiver down: FAILED after webhook_max_attempts, saying why.
my $pdown = make_pipeline(name => 'hooks-down');
my $hdown = create_hook($pdown->{pipeline_id}, 'https://127.0.0.1:' . closed_port() . '/hook')->{json};
push @secrets, $hdown->{secret};
wait_run(execute_run($pdown->{pipeline_id}), 60);
$d = wait_delivery($pdown->{pipeline_id}, $hdown->{webhook_id}, 'FAILED', 40);
ok($d, 'receiver down: FAILED');
is($d && $d->{attempts}, 3, 'after webhook_max_attempts (3) attempts');
is($d && $d->{response_status}, undef, 'no response_status');
like($d && $d->{error} // '', qr/connect|refused/i, 'the error says the connection failed');
is($d && $d->{next_attempt_at}, undef, 'nothing more due');

# A 302 is a failure; the Location is never requested.
my $r302 = start_receiver(302);
my $p302 = make_pipeline(name => 'hooks-302');
my $h302 = hook_for($p302->{pipeline_id}, $r302);
wait_run(execute_run($p302->{pipeline_id}), 60);
$d = wait_delivery($p302->{pipeline_id}, $h302->{webhook_id}, 'FAILED', 40);
ok($d, '302: FAILED');
is($d && $d->{response_status}, 302, 'response_status 302');
like($d && $d->{error} // '', qr/redirect/, 'the error says redirects are not followed');
@got = received($r302);
is(scalar @got, 3, 'three attempts, each to the webhook URL');
ok(!(grep { $_->{path} eq '/elsewhere' } @got), 'the Location was never requested');

# A slow receiver times out; another pipeline's delivery is not held up.
my $rslow = start_receiver('hold');
my $rfast = start_receiver(200);
my $pslow = make_pipeline(name => 'hooks-slow');
my $pfast = make_pipeline(name => 'hooks-fast');
my $hslow = hook_for($pslow->{pipeline_id}, $rslow);
my $hfast = hook_for($pfast->{pipeline_id}, $rfast);
wait_run(execute_run($pslow->{pipeline_id}), 60);
ok(wait_until(20, sub { received($rslow) >= 1 }, 0.1), 'the slow receiver got the first attempt');
my $pending = deliveries($pslow->{pipeline_id}, $hslow->{webhook_id})->[0];
json_response_is(http(POST => hooks($pslow->{pipeline_id}, $hslow->{webhook_id})
	. "/deliveries/$pending->{delivery_id}/redeliver", { token => $token }), 409,
	{ detail => 'The delivery is still pending' }, 'redeliver while PENDING: 409');
wait_run(execute_run($pfast->{pipeline_id}), 60);
$d = wait_delivery($pfast->{pipeline_id}, $hfast->{webhook_id}, 'SUCCEEDED');
ok($d, 'the other pipeline\'s delivery SUCCEEDED meanwhile');
is(deliveries($pslow->{pipeline_id}, $hslow->{webhook_id})->[0]{status}, 'PENDING',
   'while the slow one is still PENDING');
$d = wait_delivery($pslow->{pipeline_id}, $hslow->{webhook_id}, 'FAILED', 40);
ok($d, 'the slow receiver\'s delivery FAILED');
like($d && $d->{error} // '', qr/no answer within 3 s/, 'timed out after webhook_timeout_s');
is($d && $d->{attempts}, 3, 'each timeout a failed attempt');

# kill -9 of sluice work during an attempt: delivered after the restart.
my $rkill = start_receiver('hold', 200);
my $pkill = make_pipeline(name => 'hooks-kill');
my $hkill = hook_for($pkill->{pipeline_id}, $rkill);
wait_run(execute_run($pkill->{pipeline_id}), 60);
ok(wait_until(20, sub { received($rkill) >= 1 }, 0.1), 'an attempt is under way');
my $work = work_pid();
ok(kill('KILL', $work), "kill -9 sluice work $work");
ok(wait_until(10, sub { !proc_alive($work) }), 'sluice work is gone');
is(deliveries($pkill->{pipeline_id}, $hkill->{webhook_id})->[0]{status}, 'PENDING', 'the delivery is still PENDING');
is(dev('work-start')->{exit}, 0, 'sluice work restarted');
$d = wait_delivery($pkill->{pipeline_id}, $hkill->{webhook_id}, 'SUCCEEDED', 40);
ok($d, 'delivered after the restart');
@got = received($rkill);
is(scalar @got, 2, 'the receiver saw the interrupted attempt and the one after');
is($got[1]{id}, $got[0]{id}, 'under the same webhook-id');

# A queued run cancelled while sluice work is stopped: the event is
# recorded with the cancel, and sent once work is back.
my $rcan = start_receiver(200);
my $pcan = make_pipeline(name => 'hooks-cancel');
my $hcan = hook_for($pcan->{pipeline_id}, $rcan);
is(dev('work-stop')->{exit}, 0, 'sluice work stopped');
my $crun = execute_run($pcan->{pipeline_id});
my $cres = http(POST => "/platform/pipeline_run/$crun/cancel", { token => $token });
is($cres->{status}, 200, 'the CREATED run cancelled') or diag describe($cres);
my $cd = deliveries($pcan->{pipeline_id}, $hcan->{webhook_id});
is($cd && scalar(@$cd), 1, 'its delivery was recorded with the cancel');
is($cd && $cd->[0]{status}, 'PENDING', 'PENDING while nobody sends it');
is($cd && $cd->[0]{attempts}, 0, 'no attempt yet');
is(dev('work-start')->{exit}, 0, 'sluice work started');
$d = wait_delivery($pcan->{pipeline_id}, $hcan->{webhook_id}, 'SUCCEEDED');
ok($d, 'sent once work is back');
@got = received($rcan);
$ev = @got ? json_decode($got[0]{body}) : {};
is($ev->{data}{status}, 'FAILED', 'a cancelled run is FAILED');
like($ev->{data}{error} // '', qr/^cancelled by /, 'data.error says who cancelled it');
is($ev->{data}{started_at}, undef, 'it never started: started_at null');
is($ev->{data}{duration_ms}, undef, 'duration_ms null');

# A deleted webhook gets no more attempts.
my $rdel = start_receiver(500);
my $pdel = make_pipeline(name => 'hooks-del');
my $hdel = hook_for($pdel->{pipeline_id}, $rdel);
wait_run(execute_run($pdel->{pipeline_id}), 60);
ok(wait_until(20, sub { received($rdel) >= 1 }, 0.1), 'the first attempt was made');
my $did = received($rdel) && (received($rdel))[0]{id};
is(http(DELETE => hooks($pdel->{pipeline_id}, $hdel->{webhook_id}), { token => $token })->{status}, 200,
   'the webhook deleted while its delivery is PENDING');
ok(wait_until(20, sub {
	mysql("SELECT COUNT(*) FROM work_queue WHERE kind = 'webhook_deliver' AND ref_id = '$did' "
	      . "AND status IN ('queued', 'running')") == 0
}, 0.2), 'no attempt of it is queued or running any more');
is(scalar(received($rdel)), 1, 'and the receiver got no further attempt');
is(scalar mysql("SELECT COUNT(*) FROM webhook_deliveries WHERE id = '$did'"), 0, 'its deliveries are gone');

# No secret in any log line.
my $logs = '';
for my $f (map { env('SLUICE_VAR') . "/log/$_" } qw(serve.log work.log)) {
	open my $fh, '<', $f or next;
	local $/;
	$logs .= <$fh>;
}
ok(length $logs, 'the logs were read');
ok(!(grep { index($logs, $_) >= 0 || index($logs, substr $_, 6) >= 0 } @secrets), 'no secret in the logs');
like($logs, qr/webhook attempt failed/, 'failed attempts are logged');

done_testing();
