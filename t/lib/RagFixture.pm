package RagFixture;

# What the retrieval API tests (t/api/4*.t) share: the demo Basic user,
# datasets filled and ingested, questions asked and waited for.

use strict;
use warnings;

use Carp qw(croak);
use Exporter qw(import);
use Test::More ();
use Time::HiRes qw(time sleep);

use SluiceTest;

our @EXPORT = qw(
	demo_basic rag new_dataset add_documents wait_dataset ready_dataset
	ask answer answer_of index_file second_user
);

sub demo_basic { env('SLUICE_DEMO_BASIC') }

# rag($method, $path, $json_or_undef, %opts): a Basic call as the demo user
# (or as $opts{basic}).
sub rag {
	my ($method, $path, $json, %o) = @_;
	my %opts = (basic => $o{basic} // demo_basic());
	$opts{json} = $json if defined $json;
	$opts{$_} = $o{$_} for grep { $_ ne 'basic' } keys %o;
	return http($method, $path, \%opts);
}

sub new_dataset {
	my ($name, %o) = @_;
	my $res = rag(POST => '/dataset', { name => $name // "ds-$$" }, %o);
	croak 'POST /dataset: ' . describe($res) unless $res->{status} == 201;
	return $res->{json}{dataset_id};
}

# add_documents($id, [ {text, metadata}, ... ]) -> the response
sub add_documents {
	my ($id, $docs, %o) = @_;
	return rag(POST => "/dataset/$id/documents", { documents => $docs }, %o);
}

# Wait until the dataset is no longer processing; its GET body.
sub wait_dataset {
	my ($id, $timeout, %o) = @_;
	my $body;
	wait_until($timeout // 30, sub {
		my $res = rag(GET => "/dataset/$id", undef, %o);
		$body = $res->{json};
		$res->{status} == 200 && $body->{status} ne 'processing';
	}, 0.1);
	return $body;
}

# A dataset with these documents, ingested (croaks when it does not get there).
sub ready_dataset {
	my ($docs, %o) = @_;
	my $id = new_dataset($o{name}, %o);
	my $res = add_documents($id, $docs, %o);
	croak 'POST documents: ' . describe($res) unless $res->{status} == 202;
	my $ds = wait_dataset($id, 60, %o);
	croak "dataset $id did not become success: " . json_encode($ds)
		unless ($ds->{status} // '') eq 'success';
	return $id;
}

# ask($id, \%body) -> POST response
sub ask {
	my ($id, $body, %o) = @_;
	return rag(POST => "/dataset/$id/question", $body, %o);
}

# GET the question, waiting up to $wait seconds.
sub answer_of {
	my ($id, $qid, $wait, %o) = @_;
	return rag(GET => "/dataset/$id/question/$qid?wait=" . ($wait // 10), undef, %o);
}

# Ask and wait: the GET body (croaks when either call fails).
sub answer {
	my ($id, $body, %o) = @_;
	my $res = ask($id, $body, %o);
	croak 'POST question: ' . describe($res) unless $res->{status} == 200;
	my $got = answer_of($id, $res->{json}{question_id}, 20, %o);
	croak 'GET question: ' . describe($got) unless $got->{status} == 200;
	return $got->{json};
}

# The index file of a dataset, from the instance's config.
sub index_file {
	my ($id) = @_;
	my $conf = conf_read();
	my ($dir) = $conf =~ /^\s*rag_index_dir\s*=\s*(\S.*?)\s*$/m;
	if (!defined $dir || $dir eq '') {
		my ($root) = $conf =~ /^\s*storage_root\s*=\s*(.*?)\s*$/m;
		$dir = "$root/.rag-index";
	}
	return "$dir/$id.idx";
}

# A second Basic user ("name:password"), removed at the end of the test.
my @made_users;
sub second_user {
	my $name = "rag_${$}_" . int(rand(1e6));
	my $pw = "pw-$$-" . int(rand(1e9));
	my $r = run_cmd([ env('SLUICE_BIN'), 'user', 'add', $name, '-c', env('SLUICE_CONF') ],
			stdin => "$pw\n");
	croak "sluice user add: $r->{err}" if $r->{exit};
	push @made_users, $name;
	return "$name:$pw";
}

END {
	local ($?, $@);
	for my $u (@made_users) {
		eval { mysql("DELETE FROM rag_datasets WHERE owner_user_id = "
			     . "(SELECT id FROM api_users WHERE name = '$u')");
		       mysql("DELETE FROM api_users WHERE name = '$u'") };
	}
}

1;
