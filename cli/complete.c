/*
 * complete.c - `mnemo completion bash|zsh`: the shell completion scripts,
 * written from the option tables cli_parse reads, so that what the shell
 * offers is what the commands take. completions/ holds their output (make
 * completions writes it; a test fails when it drifts).
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

/* Each command's table, as cli_parse saw it (see cli_set_describe). */
typedef struct described {
    const char *usage;
    const cli_opt *opts;
} described;

static void describe(void *ud, const char *cmd, const char *usage, const cli_opt *opts)
{
    (void)cmd;
    described *d = ud;
    d->usage = usage;
    d->opts = opts;
}

/* Reads the option table of each of CMDS into TABLES by calling it with
 * --help while cli_parse only describes. */
static void read_tables(const cli_command *cmds, size_t n, described *tables)
{
    char help[] = "--help";
    for (size_t i = 0; i < n; i++) {
        char *argv[] = {help, NULL};
        tables[i] = (described){NULL, NULL};
        cli_set_describe(describe, &tables[i]);
        cmds[i].fn(1, argv);
    }
    cli_set_describe(NULL, NULL);
}

/* "--name -n" for each option of O. */
static void bash_words(FILE *f, const cli_opt *o)
{
    for (const char *sep = ""; o && o->name; o++, sep = " ") {
        fprintf(f, "%s--%s", sep, o->name);
        if (o->short_name)
            fprintf(f, " -%c", o->short_name);
    }
}

/* "|--name|-n|" for each option of O that takes a value. */
static void bash_takes(FILE *f, const cli_opt *o)
{
    for (; o && o->name; o++) {
        if (!o->arg)
            continue;
        fprintf(f, "|--%s|", o->name);
        if (o->short_name)
            fprintf(f, "-%c|", o->short_name);
    }
}

/* The case arm that completes the value of O for the command CMD ("*"
 * for the global options). */
static void bash_value(FILE *f, const char *cmd, const cli_opt *o)
{
    fprintf(f, "    %s:--%s", cmd, o->name);
    if (o->short_name)
        fprintf(f, " | %s:-%c", cmd, o->short_name);
    fputs(")\n", f);
    char v[512];
    cli_values(o->arg, v, sizeof v);
    if (!*v)
        fputs("        return\n", f);
    else if (!strcmp(v, "<file>"))
        fputs("        COMPREPLY=($(compgen -f -- \"$cur\"))\n        return\n", f);
    else if (!strcmp(v, "<dir>"))
        fputs("        COMPREPLY=($(compgen -d -- \"$cur\"))\n        return\n", f);
    else if (!strcmp(v, "<key=>"))
        fputs("        COMPREPLY=($(compgen -W \"$(mnemo config keys 2>/dev/null | awk '{print "
              "$1 \"=\"}')\" -- \"$cur\"))\n        compopt -o nospace 2>/dev/null\n"
              "        return\n",
              f);
    else
        fprintf(f, "        COMPREPLY=($(compgen -W \"%s\" -- \"$cur\"))\n        return\n", v);
    fputs("        ;;\n", f);
}

static int bash(FILE *f, const cli_command *cmds, size_t n, const described *t)
{
    const cli_opt *g = cli_global_opts();
    fputs("# bash completion for mnemo(1); installed as "
          "share/bash-completion/completions/mnemo.\n"
          "# Written by `mnemo completion bash` from the commands' option tables: do not "
          "edit,\n# run `make completions` (tests/test_cliux.c fails when this file "
          "drifts).\n\n"
          "_mnemo()\n{\n    local cur prev words cword\n"
          "    if declare -F _init_completion >/dev/null 2>&1; then\n"
          "        _init_completion || return\n    else\n        COMPREPLY=()\n"
          "        cur=${COMP_WORDS[COMP_CWORD]}\n        prev=${COMP_WORDS[COMP_CWORD-1]}\n"
          "        words=(\"${COMP_WORDS[@]}\")\n        cword=$COMP_CWORD\n    fi\n\n",
          f);
    fputs("    local commands=\"", f);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%s ", cmds[i].name);
    fputs("help\"\n    local global=\"", f);
    bash_words(f, g);
    fputs("\"\n    local gtakes=\"", f);
    bash_takes(f, g);
    fputs("\"\n\n    # The command: the first word that is neither an option nor an option's "
          "value.\n    local cmd=\"\" sub=\"\" i\n    for ((i = 1; i < cword; i++)); do\n"
          "        case ${words[i]} in\n"
          "        -*) [[ $gtakes == *\"|${words[i]}|\"* ]] && ((i++)) ;;\n"
          "        *) cmd=${words[i]}; break ;;\n        esac\n    done\n\n"
          "    case $cmd:$prev in\n",
          f);
    for (const cli_opt *o = g; o->name; o++)
        if (o->arg)
            bash_value(f, "*", o);
    for (size_t i = 0; i < n; i++)
        for (const cli_opt *o = t[i].opts; o && o->name; o++)
            if (o->arg)
                bash_value(f, cmds[i].name, o);
    fputs("    esac\n\n    if [[ -z $cmd ]]; then\n        if [[ $cur == -* ]]; then\n"
          "            COMPREPLY=($(compgen -W \"$global --version -V\" -- \"$cur\"))\n"
          "        else\n            COMPREPLY=($(compgen -W \"$commands\" -- \"$cur\"))\n"
          "        fi\n        return\n    fi\n\n"
          "    local opts=\"\" takes=\"\" subs=\"\" files=\"\"\n    case $cmd in\n",
          f);
    for (size_t i = 0; i < n; i++) {
        fprintf(f, "    %s)\n        opts=\"", cmds[i].name);
        bash_words(f, t[i].opts);
        fputs("\"\n        takes=\"", f);
        bash_takes(f, t[i].opts);
        fputs("\"\n", f);
        if (cmds[i].subs)
            fprintf(f, "        subs=\"%s\"\n", cmds[i].subs);
        if (cmds[i].files)
            fprintf(f, "        files=\"%s\"\n", cmds[i].files);
        fputs("        ;;\n", f);
    }
    fputs("    help)\n        subs=\"${commands% help}\"\n        ;;\n    esac\n\n"
          "    if [[ $cur == -* ]]; then\n"
          "        COMPREPLY=($(compgen -W \"$opts $global\" -- \"$cur\"))\n        return\n"
          "    fi\n    # The subcommand: the first word after the command that is not an "
          "option.\n    for ((i = i + 1; i < cword; i++)); do\n"
          "        case ${words[i]} in\n"
          "        -*) [[ $takes$gtakes == *\"|${words[i]}|\"* ]] && ((i++)) ;;\n"
          "        *) sub=${words[i]}; break ;;\n        esac\n    done\n"
          "    if [[ -n $subs && -z $sub ]]; then\n"
          "        COMPREPLY=($(compgen -W \"$subs\" -- \"$cur\"))\n        return\n    fi\n"
          "    if [[ $cmd == config && ( $sub == set || $sub == unset ) && $prev == \"$sub\" "
          "]]; then\n"
          "        COMPREPLY=($(compgen -W \"$(mnemo config keys 2>/dev/null | awk '{print "
          "$1}')\" -- \"$cur\"))\n        return\n    fi\n"
          "    case \" $files \" in\n    *\" * \"* | *\" $sub \"*)\n"
          "        [[ -n $sub || $files == \"*\" ]] && COMPREPLY=($(compgen -f -- \"$cur\"))\n"
          "        ;;\n    esac\n}\ncomplete -F _mnemo mnemo\n",
          f);
    return EXIT_OK;
}

/* S for zsh, inside '...' and, when BRACKET, inside an _arguments [...]. */
static void zsh_text(FILE *f, const char *s, int bracket)
{
    for (; *s; s++) {
        if (*s == '\'')
            fputs("'\\''", f);
        else if (bracket && (*s == '[' || *s == ']' || *s == ':' || *s == '\\'))
            fprintf(f, "\\%c", *s);
        else
            fputc(*s, f);
    }
}

/* The _arguments spec of O. */
static void zsh_spec(FILE *f, const cli_opt *o)
{
    fputs("        ", f);
    if (!strcmp(o->name, "set"))
        fputs("'*--set", f);
    else if (o->short_name)
        fprintf(f, "'(-%c --%s)'{-%c,--%s}'", o->short_name, o->name, o->short_name, o->name);
    else
        fprintf(f, "'--%s", o->name);
    fputc('[', f);
    zsh_text(f, o->help, 1);
    fputc(']', f);
    if (o->arg) {
        fputc(':', f);
        zsh_text(f, o->arg, 1);
        fputc(':', f);
        char v[512];
        cli_values(o->arg, v, sizeof v);
        if (!strcmp(v, "<file>"))
            fputs("_files", f);
        else if (!strcmp(v, "<dir>"))
            fputs("_files -/", f);
        else if (*v && *v != '<')
            fprintf(f, "(%s)", v);
    }
    fputs("' \\\n", f);
}

static int zsh(FILE *f, const cli_command *cmds, size_t n, const described *t)
{
    const cli_opt *g = cli_global_opts();
    fputs("#compdef mnemo\n# zsh completion for mnemo(1); installed as "
          "share/zsh/site-functions/_mnemo.\n"
          "# Written by `mnemo completion zsh` from the commands' option tables: do not "
          "edit,\n# run `make completions` (tests/test_cliux.c fails when this file "
          "drifts).\n\n"
          "_mnemo_keys() {\n    local -a keys\n"
          "    keys=(${(f)\"$(mnemo config keys 2>/dev/null | awk '{print $1}')\"})\n"
          "    _describe -t keys 'configuration key' keys\n}\n\n"
          "_mnemo() {\n    local curcontext=$curcontext state line ret=1\n"
          "    typeset -A opt_args\n    local -a commands global\n    commands=(\n",
          f);
    for (size_t i = 0; i < n; i++) {
        fprintf(f, "        '%s:", cmds[i].name);
        zsh_text(f, cmds[i].help, 0);
        fputs("'\n", f);
    }
    fputs("        'help:a command'\\''s help'\n    )\n    global=(\n", f);
    for (const cli_opt *o = g; o->name; o++) {
        zsh_spec(f, o);
    }
    fputs("    )\n    _arguments -C $global \\\n"
          "        '(-V --version)'{-V,--version}'[print the version]' \\\n"
          "        '1:command:->command' \\\n        '*::argument:->argument' && ret=0\n"
          "    case $state in\n    command)\n"
          "        _describe -t commands 'mnemo command' commands && ret=0\n        ;;\n"
          "    argument)\n        case $words[1] in\n",
          f);
    for (size_t i = 0; i < n; i++) {
        fprintf(f, "        %s)\n            _arguments $global \\\n", cmds[i].name);
        for (const cli_opt *o = t[i].opts; o && o->name; o++) {
            fputs("    ", f);
            zsh_spec(f, o);
        }
        if (cmds[i].subs)
            fprintf(f, "                '1:subcommand:(%s)' \\\n", cmds[i].subs);
        if (!strcmp(cmds[i].name, "config"))
            fputs("                '2:key:_mnemo_keys' \\\n", f);
        else if (cmds[i].files)
            fputs("                '*:file:_files' \\\n", f);
        else
            fputs("                '*:argument:' \\\n", f);
        fputs("                && ret=0\n            ;;\n", f);
    }
    fputs("        help)\n            _describe -t commands 'mnemo command' commands && ret=0\n"
          "            ;;\n        esac\n        ;;\n    esac\n    return ret\n}\n\n"
          "_mnemo \"$@\"\n",
          f);
    return EXIT_OK;
}

int cli_completion(FILE *f, const char *shell, const cli_command *cmds, size_t n)
{
    described tables[64];
    if (n > 64) {
        cli_error("completion: too many commands");
        return EXIT_ERROR;
    }
    if (strcmp(shell, "bash") && strcmp(shell, "zsh")) {
        cli_error("completion: unknown shell '%s' (bash or zsh)", cli_shown(shell));
        return EXIT_USAGE;
    }
    read_tables(cmds, n, tables);
    for (size_t i = 0; i < n; i++) {
        if (!tables[i].usage) {
            cli_error("completion: mnemo %s did not describe its options", cmds[i].name);
            return EXIT_ERROR;
        }
    }
    int code = !strcmp(shell, "bash") ? bash(f, cmds, n, tables) : zsh(f, cmds, n, tables);
    if (fflush(f) != 0 || ferror(f)) {
        cli_error("completion: cannot write the script");
        return EXIT_ERROR;
    }
    return code;
}
