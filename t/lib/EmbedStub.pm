package EmbedStub;

# A local OpenAI-compatible embeddings server for the tests: POST
# /v1/embeddings with {"model", "input": [...]} answers deterministic
# vectors (hashed words, L2-normalised, so texts sharing words are close).
#
#   my $stub = EmbedStub->start(dim => 64);
#   $stub->url                      # http://127.0.0.1:PORT
#   $stub->control(fail_first => 2, fail_status => 500, retry_after => 1,
#                  delay_ms => 0, wrong_dim => 0, wrong_dim_on => 'text',
#                  garbage => 0, pad => 0);
#   $stub->requests                 # [{inputs, auth, model, status, t}, ...]
#   $stub->stop                     # also done at exit
#
# Knobs live in a control file read on every request, so a test changes
# them while the server runs; fail_first counts from the last change.
# Every request is appended to a log file as one JSON line.  One request at
# a time, "Connection: close" on every answer: the client reconnects, which
# is all a test needs.

use strict;
use warnings;

use Carp qw(croak);
use Digest::MD5 qw(md5);
use File::Temp qw(tempdir);
use IO::Socket::INET;
use JSON::PP ();
use POSIX ();
use Time::HiRes qw(time sleep);

my $JSON = JSON::PP->new->utf8->canonical->allow_nonref;
my $HEAD_MAX = 65536;
my $BODY_MAX = 64 * 1024 * 1024;

# The stub's vector for one text: each lower-cased word adds +-1 at a
# hashed position; a small constant keeps an empty text off the zero vector.
sub embed {
	my ($text, $dim) = @_;
	my @v = (0) x $dim;
	$v[0] = 0.01;
	for my $w (lc($text) =~ /([[:alnum:]]+)/g) {
		utf8::encode($w) if utf8::is_utf8($w);
		my ($h, $s) = unpack 'NC', md5($w);
		$v[ $h % $dim ] += ($s & 1) ? 1 : -1;
	}
	my $n = 0;
	$n += $_ * $_ for @v;
	$n = sqrt $n;
	return [ map { $_ / $n } @v ];
}

sub start {
	my ($class, %o) = @_;
	my $dir = tempdir(CLEANUP => 1);
	my $self = bless { dim => $o{dim} // 384, dir => $dir,
			   control_file => "$dir/control.json",
			   log_file => "$dir/requests.log", owner => $$ }, $class;
	$self->control();
	my $srv = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => 0,
					Listen => 16, ReuseAddr => 1, Proto => 'tcp')
		or croak "embed stub: listen: $!";
	$self->{port} = $srv->sockport;
	my $pid = fork // croak "embed stub: fork: $!";
	if (!$pid) {
		$SIG{TERM} = sub { POSIX::_exit(0) };
		# A client that stops reading an oversized answer closes the socket:
		# the write must fail, not kill the stub (and the requests after it).
		$SIG{PIPE} = 'IGNORE';
		eval { $self->_serve($srv) };
		print STDERR "# embed stub: $@" if $@;
		POSIX::_exit(0);
	}
	close $srv;
	$self->{pid} = $pid;
	return $self;
}

sub url { "http://127.0.0.1:$_[0]{port}" }
sub port { $_[0]{port} }
sub dim { $_[0]{dim} }

sub control {
	my ($self, %k) = @_;
	# a serial makes every call a change, so fail_first always restarts
	$k{serial} = ++$self->{serial};
	my $tmp = "$self->{control_file}.tmp";
	open my $fh, '>', $tmp or croak "embed stub: $tmp: $!";
	print {$fh} $JSON->encode(\%k);
	close $fh or croak "embed stub: $tmp: $!";
	rename $tmp, $self->{control_file} or croak "embed stub: rename: $!";
}

# The requests logged so far (all, or those after the first $skip).
sub requests {
	my ($self, $skip) = @_;
	open my $fh, '<', $self->{log_file} or return [];
	my @r = map { $JSON->decode($_) } grep { /\S/ } <$fh>;
	splice @r, 0, $skip if $skip;
	return \@r;
}

sub stop {
	my ($self) = @_;
	return unless $self->{pid} && $self->{owner} == $$;
	kill 'TERM', $self->{pid};
	waitpid $self->{pid}, 0;
	delete $self->{pid};
}

sub DESTROY { $_[0]->stop }

# --- the server (child process) -----------------------------------------------

sub _serve {
	my ($self, $srv) = @_;
	my ($seen, $failed) = (-1, 0);
	while (1) {
		my $c = $srv->accept or next;
		my $k = eval {
			open my $fh, '<', $self->{control_file} or die "control: $!\n";
			local $/;
			$JSON->decode(scalar <$fh>);
		} || {};
		if (($k->{serial} // 0) != $seen) {
			$seen = $k->{serial} // 0;
			$failed = 0;
		}
		my $rec = eval { $self->_one($c, $k, \$failed) }
			|| { status => 0, error => "$@" };
		$rec->{t} = time;
		if (open my $log, '>>', $self->{log_file}) {
			print {$log} $JSON->encode($rec), "\n";
			close $log;
		}
		close $c;
	}
}

sub _reply {
	my ($c, $status, $body, %h) = @_;
	my $head = "HTTP/1.1 $status X\r\nContent-Type: application/json\r\n"
		. 'Content-Length: ' . length($body) . "\r\nConnection: close\r\n";
	$head .= "$_: $h{$_}\r\n" for sort keys %h;
	print {$c} "$head\r\n$body";
}

sub _one {
	my ($self, $c, $k, $failed) = @_;
	local $SIG{ALRM} = sub { die "timeout reading the request\n" };
	alarm 10;
	my $head = '';
	while ($head !~ /\r\n\r\n/) {
		my $n = sysread($c, my $buf, 4096);
		die "connection closed in the head\n" unless $n;
		$head .= $buf;
		die "head too large\n" if length $head > $HEAD_MAX;
	}
	my $body;
	($head, $body) = split /\r\n\r\n/, $head, 2;
	my ($line, @lines) = split /\r\n/, $head;
	my %h;
	for (@lines) {
		$h{ lc $1 } = $2 if /^([^:]+):\s*(.*?)\s*$/;
	}
	my $len = $h{'content-length'} // 0;
	die "body too large\n" if $len > $BODY_MAX;
	while (length $body < $len) {
		my $n = sysread($c, my $buf, 65536);
		die "connection closed in the body\n" unless $n;
		$body .= $buf;
	}
	alarm 0;
	my %rec = (auth => $h{authorization}, line => $line);
	if ($line !~ m{^POST /v1/embeddings HTTP/1\.[01]$}) {
		_reply($c, 404, '{"error":{"message":"not found"}}');
		return { %rec, status => 404 };
	}
	my $req = eval { $JSON->decode($body) };
	if (ref $req ne 'HASH' || ref $req->{input} ne 'ARRAY') {
		_reply($c, 400, '{"error":{"message":"bad request body"}}');
		return { %rec, status => 400 };
	}
	my @in = @{ $req->{input} };
	%rec = (%rec, inputs => scalar @in, model => $req->{model},
		ctype => $h{'content-type'}, first => substr($in[0] // '', 0, 60));
	sleep $k->{delay_ms} / 1000 if $k->{delay_ms};
	if ($$failed < ($k->{fail_first} // 0)) {
		$$failed++;
		my $st = $k->{fail_status} // 500;
		my %rh;
		$rh{'Retry-After'} = $k->{retry_after} if defined $k->{retry_after};
		# echo the credentials back, as a careless server might
		_reply($c, $st, $JSON->encode({ error => {
			message => "stub failure for " . ($h{authorization} // '-') } }), %rh);
		return { %rec, status => $st };
	}
	if ($k->{garbage}) {
		_reply($c, 200, '{"data": [');
		return { %rec, status => 200 };
	}
	# wrong_dim_on: only a request with an input containing this text
	my $wrong = $k->{wrong_dim}
		|| (defined $k->{wrong_dim_on} && grep { index($_, $k->{wrong_dim_on}) >= 0 } @in);
	my $dim = $self->{dim} + ($wrong ? 1 : 0);
	my @data;
	for my $i (0 .. $#in) {
		my $v = embed($in[$i], $dim);
		push @data, '{"object":"embedding","index":' . $i . ',"embedding":['
			. join(',', map { sprintf '%.8g', $_ } @$v) . ']}';
	}
	# pad: that many extra bytes, for the client's response size limit
	my $pad = $k->{pad} ? ',"pad":"' . ('x' x $k->{pad}) . '"' : '';
	_reply($c, 200, '{"object":"list","data":[' . join(',', @data)
		. ']' . $pad . ',"model":' . $JSON->encode($req->{model} // '')
		. ',"usage":{"prompt_tokens":0,"total_tokens":0}}');
	return { %rec, status => 200 };
}

1;
