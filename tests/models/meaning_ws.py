#!/usr/bin/env python3
"""The suite's search-by-meaning workspaces and the static table they are
searched with (test_meaning.c).

    meaning_ws.py small DIR     8 notes: MEMORY.md, USER.md, six daily notes
    meaning_ws.py large DIR     222 daily notes of 12-16 bullets, three of
                                them holding a line a query means
    meaning_ws.py table OUT [--lean] PATH...
                                a table (GloVe's text format) for every word
                                of the PATHs (files, or folders' .md files)

The table has a sentence encoder's geometry, on a small scale: every word is
a random direction, so unrelated texts (averaged word vectors) sit near
cosine 0, spread as a neural model's do; the words of one TOPIC share a
direction, so "bicycle repair" means "took the bike to the shop, the chain
kept slipping" with no word in common. --lean adds a direction every word
shares, so that all cosines sit near 0.8, as multilingual-e5's do.
Everything is seeded: the same files give the same table.
"""
import datetime
import os
import random
import re
import sys

TOPICS = [
    'bicycle bike chain derailleur cycling',
    'repair fix fixed mechanic shop slipping',
    'coffee espresso latte cappuccino drinks sugar',
    'city lisbon alfama town home',
    'dog spaniel puppy pet',
    'musical instrument cello violin guitar conservatory',
    'sale sold sell buyer',
]
# Listed first, so that the import gives them the lowest weights (SIF:
# frequent words count least); the topics' words come last.
FUNCTION = ('the a an of in on at to for from with and or but is are was were be been it its '
            'this that he she we they i you my our his her their me us them by as not no do '
            'does did have has had will would can could should there here what which who when '
            'where how all any some every one two anyone').split()

SMALL = {
    'MEMORY.md': """# MEMORY

## Infrastructure
- The gateway runs on kestrel-03 behind envoy
- Orders database: never write to it from the API, go through the ledger service
- Secrets live in Vault, never in the repository
- Deploys go out on Tuesdays and Thursdays after the standup

## People
- Priya owns the ledger migration
- Marco reviews pull requests only under 400 lines
""",
    'USER.md': """# USER

- Name: Tom, backend engineer on the payments team
- Home is Lisbon, in Alfama, since 2019
- Drinks a double espresso every morning, no sugar
- Prefers short answers with code first
""",
    'memory/2026-11-02.md': """# 2026-11-02

- 09:10 standup: the cutover moves to Thursday
- 11:30 reviewed the retry backoff in checkout-web
- 15:00 took the bike to the shop, the chain kept slipping
""",
    'memory/2026-11-03.md': """# 2026-11-03

- 10:00 on call handover to Jin
- 14:20 webhook deliveries delayed, consumer lag on the dispatcher
""",
    'memory/2026-11-04.md': """# 2026-11-04

- 09:40 planning for the gateway rewrite with Marco
- 16:10 booked flights for the offsite in Porto
""",
    'memory/2026-11-05.md': """# 2026-11-05

- 08:50 dentist at nine, back online at eleven
- 13:15 Priya asked for a status update on the cutover
""",
    'memory/2026-11-06.md': """# 2026-11-06

- 10:30 the ledger migration dry run passed
- 17:00 drinks after the release
""",
    'memory/2026-11-07.md': """# 2026-11-07

- 11:00 grocery run, bread and eggs
- 19:30 watched a film with Ana
""",
}

# The large workspace's bullets: a payments team's and a family's days.
VERBS = ('reviewed planned discussed deployed tested merged drafted checked updated cleaned '
         'booked moved wrote measured compared paid ordered sorted called visited').split()
THINGS = ('invoice backlog dashboard runbook migration schema budget roadmap contract report '
          'ticket alert pipeline release benchmark rota calendar garden kitchen balcony '
          'groceries laundry passport insurance mortgage pharmacy bakery library').split()
PEOPLE = 'Priya Marco Jin Ravi Fatima Tomasz Ana Luis Sofia Pedro Maya Leo'.split()
PLACES = 'Porto Sintra Belem Cascais Coimbra Braga Evora Faro'.split()
TARGETS = {
    40: '- 18:20 took the bike to the shop, the chain kept slipping',
    120: '- 12:40 Ravi\'s spaniel puppy comes to the office on Fridays',
    200: '- 16:05 sold the old cello to a conservatory student',
}


def filler(rng):
    k = rng.randrange(4)
    if k == 0:
        return '%s the %s with %s' % (rng.choice(VERBS), rng.choice(THINGS), rng.choice(PEOPLE))
    if k == 1:
        return '%s and %s %s the %s' % (rng.choice(PEOPLE), rng.choice(PEOPLE), rng.choice(VERBS),
                                        rng.choice(THINGS))
    if k == 2:
        return '%s is in %s until %s' % (rng.choice(PEOPLE), rng.choice(PLACES),
                                         rng.choice(['Monday', 'Thursday', 'Friday']))
    return '%s the %s, then the %s' % (rng.choice(VERBS), rng.choice(THINGS), rng.choice(THINGS))


def write(root, rel, text):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w', encoding='utf-8') as fh:
        fh.write(text)


def small(root):
    for rel, text in SMALL.items():
        write(root, rel, text)


def large(root):
    rng = random.Random(222)
    write(root, 'MEMORY.md', '# MEMORY\n\n- The payments team ships on Tuesdays\n')
    start = datetime.date(2026, 1, 1)
    for day in range(222):
        date = (start + datetime.timedelta(days=day)).isoformat()
        name = 'memory/%s.md' % date
        lines = ['# %s' % date, '']
        n = 12 + rng.randrange(5)
        for i in range(n):
            lines.append('- %02d:%02d %s' % (8 + i, rng.randrange(60), filler(rng)))
        if day in TARGETS:
            lines.insert(2 + n // 2, TARGETS[day])
        write(root, name, '\n'.join(lines) + '\n')


def table(out, lean, files):
    words, seen = [], set()

    def add(w):
        if w and w not in seen:
            seen.add(w)
            words.append(w)

    topical = set(' '.join(TOPICS).split())
    for w in FUNCTION:
        add(w)
    paths = []
    for f in files:
        if os.path.isdir(f):
            for d, _, names in sorted(os.walk(f)):
                paths += [os.path.join(d, n) for n in sorted(names) if n.endswith('.md')]
        else:
            paths.append(f)
    for f in paths:
        with open(f, encoding='utf-8') as fh:
            for w in re.findall(r"[a-z0-9]+", fh.read().lower()):
                if w not in topical:
                    add(w)
    for t in TOPICS:  # last: the rarest words weigh most (SIF)
        for w in t.split():
            add(w)
    rng = random.Random(1234)
    dims = 256
    topic_of, tv = {}, []
    for k, t in enumerate(TOPICS):
        tv.append([rng.gauss(0, 1) for _ in range(dims)])
        for w in t.split():
            topic_of[w] = k
    common = [rng.gauss(0, 1) for _ in range(dims)]
    cn = sum(c * c for c in common) ** 0.5
    common = [c / cn for c in common]
    with open(out, 'w', encoding='utf-8') as fh:
        for w in words:
            v = [rng.gauss(0, 1) for _ in range(dims)]
            if w in topic_of:
                v = [0.45 * a + 0.9 * b for a, b in zip(v, tv[topic_of[w]])]
            if lean:  # the same share of every word, whatever its length
                n = sum(a * a for a in v) ** 0.5
                v = [a + 1.2 * n * c for a, c in zip(v, common)]
            fh.write(w + ' ' + ' '.join('%.5f' % x for x in v) + '\n')


def main():
    a = sys.argv[1:]
    if len(a) >= 2 and a[0] == 'small':
        small(a[1])
    elif len(a) >= 2 and a[0] == 'large':
        large(a[1])
    elif len(a) >= 2 and a[0] == 'table':
        files = [x for x in a[2:] if x != '--lean']
        table(a[1], '--lean' in a, files)
    else:
        sys.exit(__doc__)


main()
