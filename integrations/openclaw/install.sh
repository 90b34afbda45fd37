#!/bin/sh
# Installs mnemo's OpenClaw integration into OpenClaw's state directory:
#
#   <state>/extensions/mnemo/          the memory plugin (memory_search, memory_get, recall)
#   <state>/hooks/memory-recall/       the hook pack (warms mnemo at Gateway start)
#
# <state> is $OPENCLAW_STATE_DIR, else $OPENCLAW_HOME/.openclaw, else ~/.openclaw (as
# OpenClaw resolves it). Running it again replaces both folders with the current files and
# changes nothing else; it never edits openclaw.json but prints the lines to add.
#
#   integrations/openclaw/install.sh [--state-dir DIR] [--no-hook] [--dry-run]
set -eu

here=$(cd "$(dirname "$0")" && pwd)
state=""
hook=1
dry=0
while [ $# -gt 0 ]; do
    case $1 in
    --state-dir) state=${2:?--state-dir needs a folder}; shift 2 ;;
    --state-dir=*) state=${1#*=}; shift ;;
    --no-hook) hook=0; shift ;;
    --dry-run) dry=1; shift ;;
    -h | --help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "install.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
if [ -z "$state" ]; then
    if [ -n "${OPENCLAW_STATE_DIR:-}" ]; then
        state=$OPENCLAW_STATE_DIR
    else
        state=${OPENCLAW_HOME:-${HOME:?HOME is not set}}/.openclaw
    fi
fi
case $state in "~"/*) state=${HOME:?}/${state#"~/"} ;; esac

plugin_files="index.ts memory-runtime.ts openclaw.plugin.json package.json"
hook_files="HOOK.md handler.ts package.json mnemo-client.ts memory-tools.ts openclaw-settings.ts"

# sync SRC_DIR DEST_DIR FILES...: DEST_DIR becomes exactly FILES from SRC_DIR, replaced at once
sync_dir() {
    src=$1
    dest=$2
    shift 2
    if [ "$dry" -eq 1 ]; then
        echo "would install $dest"
        return
    fi
    mkdir -p "$(dirname "$dest")"
    tmp="$dest.tmp.$$"
    rm -rf "$tmp"
    mkdir -p "$tmp"
    for f in "$@"; do
        mkdir -p "$tmp/$(dirname "$f")"
        cp "$src/$f" "$tmp/$f"
    done
    rm -rf "$dest"
    mv "$tmp" "$dest"
    echo "installed $dest"
}

hook_list=""
for f in $hook_files; do hook_list="$hook_list hooks/memory-recall/$f"; done
# shellcheck disable=SC2086
sync_dir "$here" "$state/extensions/mnemo" $plugin_files $hook_list
if [ "$hook" -eq 1 ]; then
    # shellcheck disable=SC2086
    sync_dir "$here/hooks/memory-recall" "$state/hooks/memory-recall" $hook_files
fi

if ! command -v mnemo >/dev/null 2>&1; then
    echo
    echo "note: mnemo is not on PATH; install it (make install) or set"
    echo "      plugins.entries.mnemo.config.bin to its full path."
fi

cat <<EOF

To enable, merge into $state/openclaw.json (or \$OPENCLAW_CONFIG_PATH):

  {
    "plugins": {
      "slots": { "memory": "mnemo" },
      "entries": {
        "memory-core": { "enabled": false },
        "mnemo": {
          "enabled": true,
          "hooks": { "allowConversationAccess": true },
          "config": { "recall": { "triggers": true, "memories": false } }
        }
      }
    }$( [ "$hook" -eq 1 ] && printf ',\n    "hooks": { "internal": { "entries": { "memory-recall": { "enabled": true } } } }' )
  }

memory-core must be off: outside the memory slot it still registers memory_search and
memory_get, and a plugin found in extensions/ loses that name conflict to it.
"hooks.allowConversationAccess" lets the plugin read the message for recall before prompt
build; it can be left out with recall off. If you keep a plugins.allow list, add "mnemo".
Or with the CLI:

  openclaw config set plugins.slots.memory mnemo
  openclaw config set plugins.entries.memory-core.enabled false
  openclaw config set plugins.entries.mnemo '{"enabled":true,"hooks":{"allowConversationAccess":true},"config":{"recall":{"triggers":true}}}' --strict-json --merge
EOF
if [ "$hook" -eq 1 ]; then
    echo "  openclaw hooks enable memory-recall"
fi
cat <<EOF

Then check: openclaw plugins inspect mnemo --runtime --json
The plugin searches the agent workspace by default; set plugins.entries.mnemo.config.workspace
to search another folder.
EOF
