#!/usr/bin/env python3
"""Abstention on stored facts: off-topic questions (SciFact claims) asked of the
memories of LoCoMo conversations, with default thresholds. Counts what comes back
(it should be nothing). Run ../shared/bench/locomo/run.sh first with the same
mnemo arguments: it leaves the facts workspaces in /tmp/locomo-dev/facts.

    python3 bench/locomo_offtopic.py [--set KEY=VALUE ...]
"""
import json, os, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
MNEMO = os.path.join(HERE, '..', 'build', 'mnemo')
QUERIES = os.path.join(HERE, '..', '..', 'shared', 'data', 'scifact', 'queries.jsonl')
FACTS = os.environ.get('LOCOMO_FACTS', '/tmp/locomo-dev/facts')
CONVS = ['conv-26', 'conv-41']

qs = [json.loads(l)['text'] for l in open(QUERIES)][:60]
extra = sys.argv[1:]
total = nonempty = 0
for conv in CONVS:
    ws = os.path.join(FACTS, conv)
    env = dict(os.environ, MNEMO_WORKSPACE=ws, MNEMO_DB=ws + '/db', XDG_DATA_HOME=ws + '/x',
               MNEMO_NOW='2026-11-29T12:00:00Z')
    for q in qs:
        p = subprocess.run([MNEMO] + extra + ['memory', 'search', q, '--user', conv, '--type', 'all',
                                              '--limit', '10', '--json'],
                           env=env, capture_output=True, text=True)
        if p.returncode:
            sys.exit('mnemo failed: ' + p.stderr[:300])
        n = len(json.loads(p.stdout)['results'])
        total += n
        nonempty += n > 0
print('off-topic queries %d: %d returned something, %d results in all'
      % (len(qs) * len(CONVS), nonempty, total))
