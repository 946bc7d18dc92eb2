#!/usr/bin/perl
# Wrong Basic passwords are throttled per user name and per client address,
# in a table all serve workers share, before any PBKDF2: past the budget
# (basic_fail_per_user = 10, basic_fail_per_address = 50, one attempt back
# every basic_fail_refill_s = 6 s) the answer is 429 with Retry-After.
# Correct logins are not counted, and a password verified before (on any
# worker) keeps working while its name is under attack.  The clients here
# use loopback addresses of their own, so the rest of the suite (127.0.0.1)
# is not throttled by them.

use strict;
use warnings;

use File::Temp qw(tempdir);
use Time::HiRes qw(time);
use Test::More;

use SluiceTest;

my $t = "$$" . time;
# Loopback addresses of this run's own (the table outlives a test file).
my $net = sprintf '127.%d.%d', 1 + $$ % 250, 1 + int(time / 7) % 250;
my $dir = tempdir(CLEANUP => 1);
open my $fh, '>', "$dir/cheap.conf" or die;
# Users whose stored hashes take 1000 iterations: each wrong attempt of the
# first ten is then quick.  (The stored hash keeps its own count.)
print {$fh} conf_with(conf_read(), pbkdf2_iterations => 1000);
close $fh;
chmod 0600, "$dir/cheap.conf";

my @users;
sub user {
	my ($name) = @_;
	my $r = run_cmd([ env('SLUICE_BIN'), 'user', 'add', $name, '-c', "$dir/cheap.conf" ],
			stdin => "pw-$name\n");
	die "user add $name: $r->{err}" if $r->{exit};
	push @users, $name;
	return $name;
}
END { local ($?, $@); eval { mysql("DELETE FROM api_users WHERE name = '$_'") for @users } }

sub login {
	my ($user, $pw, $from) = @_;
	return http(GET => '/_test/basic', { basic => "$user:$pw", from => $from });
}

sub throttled_ok {
	my ($res, $name) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	json_response_is($res, 429, undef, $name) or return;
	my $after = header($res, 'retry-after') // '';
	like($after, qr/^[1-6]$/, "$name: Retry-After 1..6 s");
	like($res->{json}{detail}, qr/^Too many failed attempts: try again in \Q$after\E s$/,
	     "$name: the detail says when");
	return $after;
}

# --- per user name ------------------------------------------------------------------
# Wrong passwords until the first 429: how many were checked (401), and
# how many attempts came back meanwhile (one per 6 s of the flood).
sub flood {
	my ($users, $from, $budget, $name) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my ($checked, $res) = (0);
	my $t0 = time;
	while ($checked < $budget + 20) {
		$res = login($users->[$checked % @$users], "wrong$checked", $from);
		last if $res->{status} != 401;
		$checked++;
	}
	my $refilled = int((time - $t0) / 6);
	ok($checked >= $budget && $checked <= $budget + $refilled,
	   "$name: $budget wrong passwords checked (401), then no more")
		or diag "$checked checked, $refilled attempts back in the meantime";
	return throttled_ok($res, "$name: the next");
}

my $u = user("u85_$t");
my $flood = "$net.185";
is(login($u, "pw-$u")->{status}, 200, 'u logs in (from 127.0.0.1)');
my $after = flood([ $u ], $flood, 10, 'one user name');
throttled_ok(login($u, 'wrong12', "$net.187"), 'the name is throttled from any address');
is(login($u, "pw-$u")->{status}, 200, "u's own password, verified before: still 200");
is(login($u, "pw-$u", $flood)->{status}, 200, '... also from the flooding address');

# Another user from the same address is not affected (the address has used 10 of 50).
my $v = user("v85_$t");
is(login($v, "pw-$v", $flood)->{status}, 200, 'another user from the address: 200');

# One attempt comes back after Retry-After, and only one.
ok(wait_until($after + 3, sub { login($u, 'again', $flood)->{status} == 401 }, 0.5),
   'after Retry-After one more attempt is checked (401)');
throttled_ok(login($u, 'again2', $flood), 'and the next is throttled again');

# --- per client address -----------------------------------------------------------------
my $addr = "$net.188";
my @many = map { user("w85_${_}_$t") } 1 .. 6;   # 9 each: no name over its 10
flood(\@many, $addr, 50, 'one address, six user names');
throttled_ok(login($many[0], 'nope', $addr), 'the address over its budget');
my $x = user("x85_$t");
throttled_ok(login($x, "pw-$x", $addr), 'a right password never verified from it waits too');
is(login($x, "pw-$x", "$net.189")->{status}, 200, 'the same login from another address: 200');
is(login($x, "pw-$x", $addr)->{status}, 200, 'and once verified, from the throttled address too');

# A wrong password of a user never seen, and malformed credentials: the
# malformed cost nothing and are not counted, the unknown user is.
is(login("nobody85_$t", 'x', "$net.190")->{status}, 401, 'unknown user: 401');
my $res = http(GET => '/_test/basic', { auth => 'Basic !!!', from => $addr });
is($res->{status}, 401, 'malformed credentials from a throttled address: 401, not counted');

done_testing();
