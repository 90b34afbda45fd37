// ui-facts.mjs - N stored facts as JSON lines for `mnemo memory import`
// (bench/ui-shots.sh, bench/ui-load.sh): categories, importances and
// creation dates spread over the WEEKS weeks before 2026-11-30.
//
//   node bench/ui-facts.mjs N [WEEKS] > facts.jsonl
const n = +(process.argv[2] || 100);
const weeks = +(process.argv[3] || 12);
const cats = ['preference', 'decision', 'technical', 'project', 'relationship', 'identity',
  'configuration', 'rule', 'operational'];
const subjects = ['the orders database', 'the gateway', 'deploys', 'the staging cluster', 'code review',
  'the billing service', 'on-call', 'the search index', 'release notes', 'the mobile app'];
const verbs = ['prefers', 'decided on', 'keeps', 'owns', 'asked about', 'wants', 'avoids', 'documented'];
const things = ['weekly backups', 'blue-green deploys', 'tabs over spaces', 'short pull requests',
  'Postgres 16', 'a 02:00 UTC maintenance window', 'Grafana dashboards', 'feature flags',
  'pair programming on Fridays', 'green tea in the morning'];
let seed = 42;
const rnd = (k) => { seed = (seed * 1103515245 + 12345) & 0x7fffffff; return seed % k; };
const end = Date.UTC(2026, 10, 30);
const out = [];
for (let i = 0; i < n; i++) {
  const cat = cats[rnd(cats.length)];
  const at = new Date(end - rnd(weeks * 7 * 86400) * 1000).toISOString().replace(/\.\d+Z$/, 'Z');
  const text = `User ${verbs[rnd(verbs.length)]} ${things[rnd(things.length)]} for ${subjects[rnd(subjects.length)]} (#${i + 1})`;
  const id = `00000000-0000-4000-8000-${String(i + 1).padStart(12, '0')}`;
  out.push(JSON.stringify({
    id, text, category: cat, importance: Math.round((0.4 + rnd(60) / 100) * 100) / 100, type: 'fact',
    subject: 'user', user_id: 'default', agent_id: rnd(3) ? '' : 'coder', run_id: '', metadata: {},
    triggers: [], created_at: at, updated_at: at, expires_at: null, confirmations: 0,
    last_confirmed_at: null, deleted_at: null,
    history: [{ event: 'ADD', old_text: null, new_text: text, at, detail: null }],
  }));
  if (out.length === 5000) { process.stdout.write(out.join('\n') + '\n'); out.length = 0; }
}
if (out.length) process.stdout.write(out.join('\n') + '\n');
