# bash completion for mnemo(1); installed as share/bash-completion/completions/mnemo.
# Written by `mnemo completion bash` from the commands' option tables: do not edit,
# run `make completions` (tests/test_cliux.c fails when this file drifts).

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

    local commands="index search get status config tokenize model embed recall memory skill serve ui mcp hook doctor completion help"
    local global="--workspace -w --db --config -c --store --set --help -h"
    local gtakes="|--workspace|-w||--db||--config|-c||--store||--set|"

    # The command: the first word that is neither an option nor an option's value.
    local cmd="" sub="" i
    for ((i = 1; i < cword; i++)); do
        case ${words[i]} in
        -*) [[ $gtakes == *"|${words[i]}|"* ]] && ((i++)) ;;
        *) cmd=${words[i]}; break ;;
        esac
    done

    case $cmd:$prev in
    *:--workspace | *:-w)
        COMPREPLY=($(compgen -d -- "$cur"))
        return
        ;;
    *:--db)
        COMPREPLY=($(compgen -f -- "$cur"))
        return
        ;;
    *:--config | *:-c)
        COMPREPLY=($(compgen -f -- "$cur"))
        return
        ;;
    *:--store)
        return
        ;;
    *:--set)
        COMPREPLY=($(compgen -W "$(mnemo config keys 2>/dev/null | awk '{print $1 "="}')" -- "$cur"))
        compopt -o nospace 2>/dev/null
        return
        ;;
    search:--max-results | search:-n)
        return
        ;;
    search:--min-score)
        return
        ;;
    search:--corpus)
        COMPREPLY=($(compgen -W "memory sessions all" -- "$cur"))
        return
        ;;
    search:--source-table)
        return
        ;;
    search:--kinds)
        COMPREPLY=($(compgen -W "note fact media all" -- "$cur"))
        return
        ;;
    search:--user)
        return
        ;;
    search:--agent)
        return
        ;;
    search:--run)
        return
        ;;
    search:--scope)
        COMPREPLY=($(compgen -W "all session long-term" -- "$cur"))
        return
        ;;
    search:--categories)
        COMPREPLY=($(compgen -W "identity configuration rule preference decision technical relationship project operational" -- "$cur"))
        return
        ;;
    search:--type)
        COMPREPLY=($(compgen -W "fact preference summary context raw all" -- "$cur"))
        return
        ;;
    search:--subject)
        return
        ;;
    search:--filters)
        return
        ;;
    get:--from)
        return
        ;;
    get:--lines | get:-n)
        return
        ;;
    model:--name)
        return
        ;;
    model:--max-words)
        return
        ;;
    model:--revision)
        return
        ;;
    recall:--user)
        return
        ;;
    recall:--agent)
        return
        ;;
    recall:--run)
        return
        ;;
    recall:--message | recall:-m)
        return
        ;;
    recall:--strategy)
        COMPREPLY=($(compgen -W "smart always manual" -- "$cur"))
        return
        ;;
    memory:--category)
        COMPREPLY=($(compgen -W "identity configuration rule preference decision technical relationship project operational" -- "$cur"))
        return
        ;;
    memory:--importance)
        return
        ;;
    memory:--type)
        COMPREPLY=($(compgen -W "fact preference summary context raw all" -- "$cur"))
        return
        ;;
    memory:--subject)
        return
        ;;
    memory:--user)
        return
        ;;
    memory:--agent)
        return
        ;;
    memory:--run)
        return
        ;;
    memory:--metadata)
        return
        ;;
    memory:--triggers)
        return
        ;;
    memory:--expires)
        return
        ;;
    memory:--scope)
        COMPREPLY=($(compgen -W "all session long-term" -- "$cur"))
        return
        ;;
    memory:--categories)
        COMPREPLY=($(compgen -W "identity configuration rule preference decision technical relationship project operational" -- "$cur"))
        return
        ;;
    memory:--filters)
        return
        ;;
    memory:--limit | memory:-n)
        return
        ;;
    memory:--offset)
        return
        ;;
    memory:--text)
        return
        ;;
    memory:--query | memory:-q)
        return
        ;;
    memory:--min-score)
        return
        ;;
    serve:--listen | serve:-l)
        return
        ;;
    serve:--workers)
        return
        ;;
    serve:--token-file)
        COMPREPLY=($(compgen -f -- "$cur"))
        return
        ;;
    serve:--max-body)
        return
        ;;
    serve:--timeout)
        return
        ;;
    serve:--request-timeout)
        return
        ;;
    serve:--keepalive-timeout)
        return
        ;;
    serve:--max-connections)
        return
        ;;
    serve:--max-per-client)
        return
        ;;
    serve:--parent)
        return
        ;;
    ui:--listen | ui:-l)
        return
        ;;
    esac

    if [[ -z $cmd ]]; then
        if [[ $cur == -* ]]; then
            COMPREPLY=($(compgen -W "$global --version -V" -- "$cur"))
        else
            COMPREPLY=($(compgen -W "$commands" -- "$cur"))
        fi
        return
    fi

    local opts="" takes="" subs="" files=""
    case $cmd in
    index)
        opts="--force -f --watch --quiet -q --json"
        takes=""
        ;;
    search)
        opts="--max-results -n --min-score --json -j --strict --explain --corpus --source-table --kinds --user --agent --run --scope --categories --type --subject --filters"
        takes="|--max-results|-n||--min-score||--corpus||--source-table||--kinds||--user||--agent||--run||--scope||--categories||--type||--subject||--filters|"
        ;;
    get)
        opts="--from --lines -n --json -j"
        takes="|--from||--lines|-n|"
        files="*"
        ;;
    status)
        opts="--json -j --deep"
        takes=""
        ;;
    config)
        opts="--sources -s --global -g --json -j"
        takes=""
        subs="show keys set unset path"
        ;;
    tokenize)
        opts="--query -q"
        takes=""
        ;;
    model)
        opts="--name --max-words --json -j --revision"
        takes="|--name||--max-words||--revision|"
        subs="import pull"
        files="import"
        ;;
    embed)
        opts="--query -q --document -d"
        takes=""
        ;;
    recall)
        opts="--triggers -t --user --agent --run --message -m --strategy --json -j"
        takes="|--user||--agent||--run||--message|-m||--strategy|"
        ;;
    memory)
        opts="--category --importance --type --subject --user --agent --run --metadata --triggers --expires --json -j --scope --categories --filters --limit -n --offset --deleted --text --query -q --min-score"
        takes="|--category||--importance||--type||--subject||--user||--agent||--run||--metadata||--triggers||--expires||--scope||--categories||--filters||--limit|-n||--offset||--text||--query|-q||--min-score|"
        subs="add update delete purge get list history confirm search export import recover"
        files="export import recover"
        ;;
    skill)
        opts=""
        takes=""
        ;;
    serve)
        opts="--listen -l --workers --token-file --max-body --timeout --request-timeout --keepalive-timeout --max-connections --max-per-client --no-watch --parent --verbose -v"
        takes="|--listen|-l||--workers||--token-file||--max-body||--timeout||--request-timeout||--keepalive-timeout||--max-connections||--max-per-client||--parent|"
        ;;
    ui)
        opts="--listen -l --no-open"
        takes="|--listen|-l|"
        ;;
    mcp)
        opts=""
        takes=""
        ;;
    hook)
        opts="--triggers --recall"
        takes=""
        subs="claude-code"
        ;;
    doctor)
        opts="--json -j --no-probe"
        takes=""
        ;;
    completion)
        opts=""
        takes=""
        subs="bash zsh"
        ;;
    help)
        subs="${commands% help}"
        ;;
    esac

    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$opts $global" -- "$cur"))
        return
    fi
    # The subcommand: the first word after the command that is not an option.
    for ((i = i + 1; i < cword; i++)); do
        case ${words[i]} in
        -*) [[ $takes$gtakes == *"|${words[i]}|"* ]] && ((i++)) ;;
        *) sub=${words[i]}; break ;;
        esac
    done
    if [[ -n $subs && -z $sub ]]; then
        COMPREPLY=($(compgen -W "$subs" -- "$cur"))
        return
    fi
    if [[ $cmd == config && ( $sub == set || $sub == unset ) && $prev == "$sub" ]]; then
        COMPREPLY=($(compgen -W "$(mnemo config keys 2>/dev/null | awk '{print $1}')" -- "$cur"))
        return
    fi
    case " $files " in
    *" * "* | *" $sub "*)
        [[ -n $sub || $files == "*" ]] && COMPREPLY=($(compgen -f -- "$cur"))
        ;;
    esac
}
complete -F _mnemo mnemo
