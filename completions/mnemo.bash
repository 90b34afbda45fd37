# bash completion for mnemo(1); installed as share/bash-completion/completions/mnemo.
# tests/test_cliux.c checks that it lists every command of cli/main.c.

_mnemo()
{
    local cur prev words cword
    if declare -F _init_completion >/dev/null 2>&1; then
        _init_completion || return
    else
        COMPREPLY=()
        cur=${COMP_WORDS[COMP_CWORD]}
        prev=${COMP_WORDS[COMP_CWORD-1]}
        words=("${COMP_WORDS[@]}")
        cword=$COMP_CWORD
    fi

    local commands="index search get status config tokenize model embed recall memory skill serve mcp hook doctor help"
    local global="--workspace -w --db --store --config -c --set --help -h --version -V"

    case $prev in
    --workspace | -w)
        COMPREPLY=($(compgen -d -- "$cur"))
        return
        ;;
    --db | --config | -c | --token-file)
        COMPREPLY=($(compgen -f -- "$cur"))
        return
        ;;
    --set)
        local keys
        keys=$(mnemo config keys 2>/dev/null | awk '{print $1 "="}')
        COMPREPLY=($(compgen -W "$keys" -- "$cur"))
        compopt -o nospace 2>/dev/null
        return
        ;;
    --corpus)
        COMPREPLY=($(compgen -W "memory sessions all" -- "$cur"))
        return
        ;;
    --strategy)
        COMPREPLY=($(compgen -W "smart always manual" -- "$cur"))
        return
        ;;
    --scope)
        COMPREPLY=($(compgen -W "all session long-term" -- "$cur"))
        return
        ;;
    --store | --listen | -l | -n | --max-results | --min-score | --from | --lines | --name | \
        --max-words | --user | --agent | --run | --message | -m | --category | --importance | \
        --type | --subject | --metadata | --triggers | --expires | --categories | --filters | \
        --limit | --offset | --text | --query | -q | --workers | --max-body | --timeout | \
        --request-timeout | --max-per-client | --max-connections | --keepalive-timeout | --source-table)
        return
        ;;
    esac

    # The command: the first word that is neither an option nor an option's value.
    local cmd="" i
    for ((i = 1; i < cword; i++)); do
        case ${words[i]} in
        --workspace | -w | --db | --store | --config | -c | --set) ((i++)) ;;
        -*) ;;
        *) cmd=${words[i]}; break ;;
        esac
    done

    if [[ -z $cmd ]]; then
        if [[ $cur == -* ]]; then
            COMPREPLY=($(compgen -W "$global" -- "$cur"))
        else
            COMPREPLY=($(compgen -W "$commands" -- "$cur"))
        fi
        return
    fi

    local opts="" subs=""
    case $cmd in
    index) opts="--force -f --watch --quiet -q --json" ;;
    search) opts="--max-results -n --min-score --json -j --strict --explain --corpus --source-table" ;;
    get) opts="--from --lines -n --json -j" ;;
    status) opts="--json -j --deep" ;;
    config)
        opts="--sources -s --global -g --json -j"
        subs="show keys set unset path"
        ;;
    tokenize) opts="--query -q" ;;
    model)
        opts="--name --max-words --revision --json -j"
        subs="import pull"
        ;;
    embed) opts="--query -q --document -d" ;;
    recall) opts="--triggers -t --user --agent --run --message -m --strategy --json -j" ;;
    memory)
        opts="--category --importance --type --subject --user --agent --run --metadata --triggers --expires --json -j --scope --categories --filters --limit -n --offset --deleted --text --query -q --min-score"
        subs="add update delete purge get list history confirm search export import recover"
        ;;
    serve) opts="--listen -l --workers --token-file --max-body --timeout --request-timeout --max-per-client --max-connections --keepalive-timeout --no-watch --parent --verbose -v" ;;
    hook)
        opts="--triggers --recall"
        subs="claude-code"
        ;;
    doctor) opts="--json -j" ;;
    esac

    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$opts $global" -- "$cur"))
        return
    fi
    # The subcommand, right after the command.
    local sub=""
    for ((i = i + 1; i < cword; i++)); do
        case ${words[i]} in
        -*) ;;
        *) sub=${words[i]}; break ;;
        esac
    done
    if [[ -n $subs && -z $sub ]]; then
        COMPREPLY=($(compgen -W "$subs" -- "$cur"))
        return
    fi
    case $cmd/$sub in
    config/set | config/unset)
        local keys
        keys=$(mnemo config keys 2>/dev/null | awk '{print $1}')
        [[ ${words[cword-1]} == "$sub" ]] && COMPREPLY=($(compgen -W "$keys" -- "$cur"))
        ;;
    get/* | model/import | memory/import | memory/export | memory/recover)
        COMPREPLY=($(compgen -f -- "$cur"))
        ;;
    esac
}
complete -F _mnemo mnemo
