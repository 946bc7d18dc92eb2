#!/usr/bin/perl
# A verified Basic password is remembered for basic_cache_ttl.  A password
# in use is checked again in the last quarter of that time, by one worker
# once its response is sent, so the requests of a busy user never all find
# it expired at once: each would need a PBKDF2, and all but
# password_checks_max of them were refused 429 for as long as one took.
# The renewal checks the password as it is now: a changed password, a
# disabled user or a removed one still stops working within the ttl.

use strict;
use warnings;

use List::Util qw(max min);
use MIME::Base64 qw(encode_base64);
use Time::HiRes qw(time sleep);
use Test::More;

use SluiceTest;

my $TTL = 8;                  # renewed from 6 s on: 2 s for the check again
my $name = "renew_${$}_" . int(time);
my $pw;
my $orig = conf_read();
my $created = 0;

END {
	local ($?, $@);
	eval { mysql("DELETE FROM api_users WHERE name = '$name'") } if $created;
	eval { reload_serve($orig) };
}

sub creds { 'Basic ' . encode_base64("$_[0]:$_[1]", '') }
sub basic { http(GET => '/_test/basic', { auth => creds(@_) })->{status} }

sub user_cmd {
	my ($verb, $password) = @_;
	return run_cmd([ env('SLUICE_BIN'), 'user', $verb, $name, '-c', env('SLUICE_CONF') ],
		       stdin => "$password\n");
}

# One check share for the two workers, and a hash that takes about a
# quarter of a second to check: with no renewal the first request past the
# expiry holds the share for that long, and the other worker refuses every
# request of the user meanwhile; with it, the check again ends well within
# the last 2 s of the ttl.  400,000 iterations take that long in a plain
# build; a sanitizer build spent 2 s on them (its interceptors sit in
# every call OpenSSL makes to libc), as long as the renewal has, so the
# iterations are scaled to what the first check took, both ways.  Each
# try has a password of its own, so that its check is not a cache hit.
# The old passwords below are wrong attempts, asked for on purpose: none
# of them may be throttled.
my $iterations = 400000;
for my $try (1 .. 3) {
	$pw = "renew-first-$try";
	reload_serve(conf_with($orig, basic_cache_ttl => $TTL, password_checks_max => 1,
			       pbkdf2_iterations => $iterations, basic_fail_per_user => 1000,
			       basic_fail_per_address => 1000));
	my $r = user_cmd($created ? 'passwd' : 'add', $pw);
	is($r->{exit}, 0, "sluice user add or passwd $name ($iterations iterations)")
		or diag $r->{err};
	$created = 1;
	my $t0 = time;
	is(basic($name, $pw), 200, 'the user authenticates (a check, not a cache hit)');
	my $took = time - $t0;
	note(sprintf '%d iterations: the check took %.2f s', $iterations, $took);
	last if $took >= 0.15 && $took <= 0.5;
	$iterations = min(4000000, max(1000, int($iterations * 0.25 / $took)));
}

# --- a busy user, past two ttls ------------------------------------------------

my @res = parallel_requests(clients => 4, duration => 2.2 * $TTL,
			    path => '/_test/basic', opts => { auth => creds($name, $pw) });
my %by;
$by{ $_->{status} }++ for @res;
cmp_ok(scalar @res, '>', 40, 'the clients asked throughout (' . scalar(@res) . ' requests)');
is_deeply(\%by, { 200 => scalar @res }, 'every request of the busy user answered 200, none 429')
	or diag explain \%by;
my ($first, $last) = ($res[0]{start}, $res[-1]{start});
cmp_ok($last - $first, '>', 2 * $TTL, 'the requests spanned two ttls');

# --- a changed password stops working within the ttl -----------------------------

# The old password is in use while it changes: every answer after the first
# 401 is a 401, and the first comes within the ttl (plus a renewal's time).
# @let_in: what a request the cache still lets in is answered besides 200
# (the test route answers 404 for a user whose row is gone).
sub until_refused {
	my ($what, $change, @let_in) = @_;
	my %let_in = map { $_ => 1 } 200, @let_in;
	my $t0 = time;
	$change->();
	my ($refused_at, @after);
	while (time - $t0 < $TTL + 3) {
		my $st = basic($name, $pw);
		if (defined $refused_at) {
			push @after, $st;
			last if @after >= 10;
		} elsif ($st == 401) {
			$refused_at = time - $t0;
		} elsif (!$let_in{$st}) {
			fail("$what: the old password answered $st");
			return;
		}
		sleep 0.1;
	}
	ok(defined $refused_at, "$what: the old password is refused") or return;
	cmp_ok($refused_at, '<=', $TTL + 1.5, "$what: within the ttl ($refused_at s)");
	is_deeply([ grep { $_ != 401 } @after ], [], "$what: and stays refused");
}

is(basic($name, $pw), 200, 'the old password works before the change');
my $pw2 = 'renew-second';
until_refused('passwd', sub {
	my $c = user_cmd('passwd', $pw2);
	is($c->{exit}, 0, 'sluice user passwd') or diag $c->{err};
});
is(basic($name, $pw2), 200, 'the new password works');

# --- a disabled user ----------------------------------------------------------------

$pw = $pw2;
is(basic($name, $pw), 200, 'the user works before it is disabled');
until_refused('disabled', sub { mysql("UPDATE api_users SET disabled = 1 WHERE name = '$name'") });

# --- a removed user -------------------------------------------------------------------

mysql("UPDATE api_users SET disabled = 0 WHERE name = '$name'");
is(basic($name, $pw), 200, 'the user works again once enabled');
until_refused('removed', sub { mysql("DELETE FROM api_users WHERE name = '$name'") }, 404);

done_testing();
