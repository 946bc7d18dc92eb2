/* admin.h - the operator's subcommands: migrate, customer, user, token.
 *
 * Each takes argv after the subcommand name, prints its result on stdout
 * and errors on stderr, and returns the process exit status:
 * 0 ok, 1 failed, 2 usage, 78 configuration. */
#ifndef SLUICE_ADMIN_H
#define SLUICE_ADMIN_H

#include <stdio.h>

struct config;
struct db;

#define EXIT_USAGE 2
#define EXIT_CONFIG 78

int admin_migrate(int argc, char **argv);
int admin_customer(int argc, char **argv);
int admin_user(int argc, char **argv);
int admin_token(int argc, char **argv);
int admin_infer(int argc, char **argv);       /* needs no config */

/* The config file to use: the -c option, else $SLUICE_CONF, else the
 * installed default. */
const char *admin_config_path(const char *opt);
/* Load it; on failure prints why and returns EXIT_CONFIG. */
int admin_load_config(const char *opt, struct config *c);
/* Connect; on failure prints why and returns NULL. */
struct db *admin_connect(const struct config *c);
/* The "VERB NAME" operands after the options (argv[optind..]): verb one of
 * verbs (NULL-terminated).  0, or EXIT_USAGE after printing usage. */
int admin_verb_name(int argc, char **argv, const char *const *verbs,
                    const char *usage, const char **verb, const char **name);
/* Read one line (the password) from stdin without its newline.  Refuses
 * an empty line and one longer than cap - 1. */
int admin_read_secret(char *buf, size_t cap);

#endif
