/* infer_cmd.c - `sluice infer`: the schema a data file would get, printed
 * as the API's schema JSON.  Reads the file only: no config, no database. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "admin/admin.h"
#include "tabular/tabular.h"
#include "util/str.h"

static const char usage[] =
	"usage: sluice infer [--format F] [--delimiter C] [--encoding E] [--sheet S]\n"
	"                    [--skip-rows N] [--header-row N] [--max-rows N] FILE\n"
	"Print the inferred schema of FILE as JSON ({\"columns\": [...], \"row_count\",\n"
	"\"analyzed_rows\"}) and, on stderr, what was detected.  The format comes from\n"
	"the file name (.csv .txt .tsv .json .jsonl .ndjson .xlsx .xls .parquet)\n"
	"unless --format (csv, txt, json, xlsx, xls, parquet) names it.  --delimiter\n"
	"is one character (\\t or 'tab' for a tab, 'space' for runs of blanks);\n"
	"--encoding one of utf-8, utf-16,\n"
	"utf-16le, utf-16be, latin-1, iso-8859-1, windows-1252; --max-rows the rows\n"
	"whose values are classified (default 100000; the rest are only counted).\n"
	"-c FILE is accepted and ignored: no config is needed.\n"
	"Exit status: 0 ok, 1 the file cannot be read or parsed, 2 usage.\n";

static int parse_count(const char *what, const char *v, long long min, long long *out)
{
	if (str_to_ll(v, min, 1LL << 62, out) != 0) {
		fprintf(stderr, "sluice: %s must be a whole number >= %lld\n", what, min);
		return -1;
	}
	return 0;
}

int admin_infer(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "format", required_argument, NULL, 'f' },
		{ "delimiter", required_argument, NULL, 'd' },
		{ "encoding", required_argument, NULL, 'e' },
		{ "sheet", required_argument, NULL, 's' },
		{ "skip-rows", required_argument, NULL, 'k' },
		{ "header-row", required_argument, NULL, 'r' },
		{ "max-rows", required_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct tab_opts o;
	struct infer_result res = { 0 };
	struct json_object *j = NULL;
	enum tab_format f;
	const char *format = NULL, *path;
	char err[512];
	long long v;
	int ch, rc;

	tab_opts_init(&o);
	optind = 1;
	while ((ch = getopt_long(argc, argv, "c:h", opts, NULL)) != -1) {
		switch (ch) {
		case 'c':
			break;
		case 'f':
			format = optarg;
			break;
		case 'd':
			if (strcmp(optarg, "\\t") == 0 || strcmp(optarg, "tab") == 0)
				o.delimiter = '\t';
			else if (strcmp(optarg, "space") == 0)
				o.delimiter = ' ';
			else if (strlen(optarg) == 1)
				o.delimiter = optarg[0];
			else {
				fprintf(stderr, "sluice: --delimiter is one character\n");
				return EXIT_USAGE;
			}
			break;
		case 'e':
			if (str_copy(o.encoding, sizeof o.encoding, optarg) != 0) {
				fprintf(stderr, "sluice: --encoding is too long\n");
				return EXIT_USAGE;
			}
			break;
		case 's':
			if (str_copy(o.sheet_name, sizeof o.sheet_name, optarg) != 0) {
				fprintf(stderr, "sluice: --sheet is too long\n");
				return EXIT_USAGE;
			}
			break;
		case 'k':
			if (parse_count("--skip-rows", optarg, 0, &v) != 0)
				return EXIT_USAGE;
			o.skip_rows = (long)v;
			break;
		case 'r':
			if (parse_count("--header-row", optarg, 0, &v) != 0)
				return EXIT_USAGE;
			o.header_row = (long)v;
			break;
		case 'm':
			if (parse_count("--max-rows", optarg, 1, &v) != 0)
				return EXIT_USAGE;
			o.max_analyze_rows = v;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			fputs(usage, stderr);
			return EXIT_USAGE;
		}
	}
	if (optind + 1 != argc) {
		fputs(usage, stderr);
		return EXIT_USAGE;
	}
	path = argv[optind];
	if (format != NULL ? tab_format_parse(format, &f) != 0
	                   : tab_format_from_name(path, &f) != 0) {
		fprintf(stderr, "sluice: %s: unknown format; use --format "
		        "(csv, txt, json, xlsx, xls, parquet)\n", format != NULL ? format : path);
		return EXIT_USAGE;
	}
	rc = infer_file(path, f, &o, &res, err, sizeof err);
	if (rc != 0) {
		fprintf(stderr, "sluice: %s: %s\n", path, err);
		return rc == TAB_ERR_OPTION ? EXIT_USAGE : 1;
	}
	j = infer_result_json(&res);
	if (j == NULL) {
		fprintf(stderr, "sluice: out of memory\n");
		infer_result_free(&res);
		return 1;
	}
	printf("%s\n", json_object_to_json_string_ext(j, JSON_C_TO_STRING_PRETTY |
	                                                 JSON_C_TO_STRING_SPACED));
	fprintf(stderr, "format=%s encoding=%s delimiter=%s header=%s rows=%lld "
	        "analyzed_rows=%lld ragged_rows=%lld first_ragged_row=%lld%s%s\n",
	        tab_format_name(f), res.stats.encoding[0] ? res.stats.encoding : "-",
	        res.stats.delimiter == '\t' ? "tab" : res.stats.delimiter == ' ' ? "space"
	        : res.stats.delimiter == 0 ? "-" : (char[]){ res.stats.delimiter, 0 },
	        res.stats.has_header ? "yes" : "no", res.row_count, res.analyzed_rows,
	        res.stats.ragged_rows, res.stats.first_ragged_row,
	        res.stats.sheet_name[0] ? " sheet=" : "", res.stats.sheet_name);
	json_object_put(j);
	infer_result_free(&res);
	return 0;
}
