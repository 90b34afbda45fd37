/*
 * pgmaxscore.c - MaxScore's rounds over PostgreSQL (see pgint.h).
 */
#include "store/postgres/pgint.h"

#include "util/buf.h"

#include <string.h>

#define PGMS_SET_TERMS 12 /* unread terms combined into sets of them at most */
#define PGMS_SETS 64      /* sets of unread terms in one round's tsquery at most */

/* Whether rows holding the unread terms of MASK (bit i: term READ + i) and
 * no term read may still reach THETA. */
static int may_reach(const pgms *ms, int read, unsigned mask, double theta)
{
    double sum = 0;
    for (int i = 0; i < ms->n - read; i++)
        if (mask & (1u << i))
            sum += ms->ub[read + i];
    return ms->reach(ms->ud, theta, sum);
}

/* The smallest sets of unread terms that may reach THETA (none of their
 * subsets may) into SETS: rows holding none of them cannot. 0 when there
 * are too many terms or sets for one tsquery. */
static int reaching_sets(const pgms *ms, int read, double theta, unsigned *sets)
{
    int u = ms->n - read, n = 0;
    if (u > PGMS_SET_TERMS)
        return 0;
    for (unsigned mask = 1; mask < (1u << u); mask++) {
        if (!may_reach(ms, read, mask, theta))
            continue;
        int minimal = 1;
        for (int i = 0; minimal && i < u; i++)
            if ((mask & (1u << i)) && may_reach(ms, read, mask & ~(1u << i), theta))
                minimal = 0;
        if (!minimal)
            continue;
        if (n == PGMS_SETS)
            return 0;
        sets[n++] = mask;
    }
    return n;
}

/* Appends "(t1 | t2 ...)" of terms FROM..TO to B. */
static void terms_tsq(buf *b, const pgms *ms, int from, int to)
{
    buf_putc(b, '(');
    for (int i = from; i < to; i++) {
        if (i > from)
            buf_puts(b, " | ");
        pgtext_lexeme(b, ms->lex[i], strlen(ms->lex[i]));
    }
    buf_putc(b, ')');
}

/* Appends "((a & b) | (c))" of the unread terms' SETS to B. */
static void sets_tsq(buf *b, const pgms *ms, int read, const unsigned *sets, int n)
{
    buf_putc(b, '(');
    for (int j = 0; j < n; j++) {
        buf_puts(b, j ? " | (" : "(");
        int first = 1;
        for (int i = 0; i < ms->n - read; i++) {
            if (!(sets[j] & (1u << i)))
                continue;
            if (!first)
                buf_puts(b, " & ");
            pgtext_lexeme(b, ms->lex[read + i], strlen(ms->lex[read + i]));
            first = 0;
        }
        buf_putc(b, ')');
    }
    buf_putc(b, ')');
}

int pgmaxscore_run(mnemo *m, const pgms *ms)
{
    unsigned sets[PGMS_SETS];
    int nsets = 0, read = 0, first = ms->first, round = 0, rc = MNEMO_OK;
    buf tsq;
    buf_init(&tsq, 0);
    while (read < ms->n) {
        int to = nsets ? ms->n : first ? first : read + 1;
        if (to > ms->n)
            to = ms->n;
        first = 0;
        buf_reset(&tsq);
        if (nsets)
            sets_tsq(&tsq, ms, read, sets, nsets);
        else
            terms_tsq(&tsq, ms, read, to);
        if (read) {
            buf_puts(&tsq, " & !");
            terms_tsq(&tsq, ms, 0, read);
        }
        buf_puts(&tsq, ms->tail);
        if (buf_err(&tsq)) {
            rc = core_error(m, MNEMO_NOMEM, "out of memory");
            break;
        }
        read = to;
        if ((rc = ms->read(ms->ud, tsq.data, round++)) || read >= ms->n)
            break;
        /* The pool's threshold against what the unread terms can add. */
        double theta = 0, rest = 0;
        int full = ms->full(ms->ud, &theta);
        for (int i = read; i < ms->n; i++)
            rest += ms->ub[i];
        if (full && !ms->reach(ms->ud, theta, rest))
            break;
        /* Next, with a full pool: the rows holding a set of unread terms
         * that may reach it, all in one round. Else the next term, and
         * with ADVANCE the fewest more that would end it at this
         * threshold. */
        nsets = 0;
        if (full && ms->sets && (nsets = reaching_sets(ms, read, theta, sets)) > 0)
            continue;
        if (!ms->advance)
            continue;
        first = read + 1;
        rest -= ms->ub[read];
        while (full && first < ms->n && ms->reach(ms->ud, theta, rest))
            rest -= ms->ub[first++];
    }
    buf_cleanup(&tsq);
    return rc;
}
